#include "tests/cpp/ir/sample_kernels.h"

#include "quadrants/ir/builder.h"
#include "quadrants/ir/size_expr.h"
#include "quadrants/ir/statements.h"

namespace quadrants::ir::samples {
namespace {

constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kU1 = PrimitiveType::kU1;

SourceLocation At(int line) {
  return SourceLocation{"samples.py", line};
}

std::unique_ptr<Kernel> NewKernel(const char* name, int line) {
  return std::make_unique<Kernel>(name, At(line));
}

}  // namespace

const SNodeTree& SampleTree() {
  static const SNodeTree* tree = [] {
    auto* t = new SNodeTree();
    int dense_1d = t->AddDense(t->root(), {0}, {8}).value();
    t->AddPlace(dense_1d, kF32, "x").value();
    int dense_2d = t->AddDense(t->root(), {0, 1}, {4, 8}).value();
    t->AddPlace(dense_2d, kF32, "y").value();
    int pointer = t->AddSparse(t->root(), SNode::Kind::kPointer, {0}, {4}).value();
    t->AddPlace(pointer, kF32, "z").value();
    t->Finalize().IgnoreError();
    return t;
  }();
  return *tree;
}

std::unique_ptr<Kernel> BuildParamsKernel() {
  auto k = NewKernel("params", 10);
  k->AddParam(KernelParam::Scalar("n", kI32));
  k->AddParam(KernelParam::Ndarray("a", kF32, 2));
  k->AddParam(KernelParam::Field("x", kF32, kFieldX));
  IRBuilder b(k.get(), &SampleTree());
  b.SetLocation(At(11));
  Stmt* n = b.ArgLoad(0);
  Stmt* zero = b.ConstI32(0);
  Stmt* a_ptr = b.NdarrayPtr(1, {n, zero});
  b.NdarrayShape(1, 1);
  b.SetLocation(At(12));
  Stmt* x_ptr = b.FieldPtr(kFieldX, {n});
  Stmt* value = b.GlobalLoad(a_ptr);
  b.GlobalStore(x_ptr, value);
  b.Atomic(AtomicOpKind::kAdd, a_ptr, value);
  return k;
}

std::unique_ptr<Kernel> BuildArithKernel(bool typed) {
  auto k = NewKernel(typed ? "arith_typed" : "arith", 20);
  k->AddParam(KernelParam::Scalar("x", kF32));
  IRBuilder b(k.get());
  b.SetLocation(At(21));
  Stmt* x = b.ArgLoad(0);
  Stmt* var = b.Alloca(kF32);
  b.LocalStore(var, x);
  Stmt* v = b.LocalLoad(var);
  Stmt* neg = b.Unary(UnaryOpKind::kNeg, v);
  b.Cast(v, kI32);
  b.SetLocation(At(22));
  Stmt* product = b.Mul(v, neg);
  Stmt* less = b.Lt(v, x);
  Stmt* pick = b.Select(less, v, product);
  if (typed) {
    Typed(neg, kF32);
    Typed(product, kF32);
    Typed(less, kU1);
    Typed(pick, kF32);
  }
  return k;
}

std::unique_ptr<Kernel> BuildControlFlowKernel() {
  auto k = NewKernel("control", 30);
  k->AddParam(KernelParam::Scalar("n", kI32));
  IRBuilder b(k.get());
  b.SetLocation(At(31));
  Stmt* zero = b.ConstI32(0);
  Stmt* n = b.ArgLoad(0);
  auto* outer = b.RangeFor(zero, n);
  auto outer_scope = b.EnterBlock(outer->body());
  b.SetLocation(At(32));
  Stmt* i = b.LoopIndex(outer);
  auto* inner = b.RangeFor(zero, i);
  {
    auto inner_scope = b.EnterBlock(inner->body());
    b.SetLocation(At(33));
    Stmt* j = b.LoopIndex(inner);
    auto* branch = b.If(Typed(b.Lt(j, i), kU1));
    {
      auto then_scope = b.EnterBlock(branch->true_block());
      b.Continue();
    }
    auto else_scope = b.EnterBlock(branch->false_block());
    b.Break();
  }
  b.SetLocation(At(34));
  auto* loop = b.While();
  {
    auto loop_scope = b.EnterBlock(loop->body());
    auto* branch = b.If(Typed(b.Lt(i, n), kU1));
    {
      auto then_scope = b.EnterBlock(branch->true_block());
      b.Break();
    }
    auto else_scope = b.EnterBlock(branch->false_block());
    b.Continue();
  }
  b.SetLocation(At(35));
  b.Assert(Typed(b.Lt(i, n), kU1), "i = %d out of range [0, %d)", {i, n});
  return k;
}

std::unique_ptr<Kernel> BuildOffloadedKernel() {
  auto k = NewKernel("offloaded", 40);
  k->AddParam(KernelParam::Ndarray("a", kF32, 1));
  IRBuilder b(k.get(), &SampleTree());

  b.SetLocation(At(41));
  auto* range = b.Task(TaskKind::kRangeFor);
  {
    auto prologue = b.EnterBlock(range->prologue());
    Stmt* begin = b.ConstI32(0);
    Stmt* end = b.NdarrayShape(0, 0);
    range->SetBounds(begin, end);
  }
  {
    auto body = b.EnterBlock(range->body());
    Stmt* i = b.LoopIndex(range);
    Stmt* ptr = b.NdarrayPtr(0, {i});
    Stmt* passes = Typed(b.Binary(ir::BinaryOpKind::kGt, b.GlobalLoad(ptr),
                                  b.ConstF32(0.25f)),
                         kU1);
    ir::AdStackGate gate;
    gate.id = 0;
    gate.label = "a";
    gate.indices.push_back({ir::AdStackGateIndex::Kind::kLoopDigit});
    gate.threshold = 0.25;
    b.AdStackRow(passes, gate);
    b.GlobalStore(ptr, b.ConstF32(0.5f));
  }

  b.SetLocation(At(42));
  auto* cells = b.Task(TaskKind::kStructFor, kDense1D);
  {
    auto body = b.EnterBlock(cells->body());
    Stmt* i = b.LoopIndex(cells);
    Stmt* ptr = b.FieldPtr(kFieldX, {i});
    b.Atomic(AtomicOpKind::kAdd, ptr, b.ConstF32(0.1f));
  }

  b.SetLocation(At(43));
  auto* serial = b.Task(TaskKind::kSerial);
  {
    auto body = b.EnterBlock(serial->body());
    Stmt* zero = b.ConstI32(0);
    Stmt* value = b.GlobalLoad(b.FieldPtr(kFieldX, {zero}));
    b.GlobalStore(b.NdarrayPtr(0, {zero}), value);
    auto* loop = b.While();
    auto loop_body = b.EnterBlock(loop->body());
    b.Break();
  }
  return k;
}

std::unique_ptr<Kernel> BuildStructForKernel() {
  auto k = NewKernel("struct_loop", 50);
  k->AddParam(KernelParam::Field("y", kF32, kFieldY));
  IRBuilder b(k.get(), &SampleTree());
  b.SetLocation(At(51));
  auto* loop = b.StructFor(kDense2D);
  auto body = b.EnterBlock(loop->body());
  Stmt* i = b.LoopIndex(loop, 0);
  Stmt* j = b.LoopIndex(loop, 1);
  Stmt* ptr = b.FieldPtr(kFieldY, {i, j});
  b.SetLocation(At(52));
  auto* branch = b.If(Typed(b.Lt(i, j), kU1));
  auto then_scope = b.EnterBlock(branch->true_block());
  b.GlobalStore(ptr, b.ConstF32(1.0f));
  return k;
}

std::unique_ptr<Kernel> BuildAdStackKernel() {
  auto k = NewKernel("adstack", 60);
  k->AddParam(KernelParam::Ndarray("a", kF32, 1));
  IRBuilder b(k.get());
  b.SetLocation(At(61));
  Stmt* fstack = b.AdStackAlloca(kF32, 16);
  auto* istack = b.AdStackAlloca(kI32, 0);
  istack->set_size_expr(
      SizeExpr::Add(SizeExpr::NdarrayShape(0, 0), SizeExpr::Const(1)));
  b.SetLocation(At(62));
  b.AdStackPush(fstack, b.ConstF32(2.0f));
  b.AdStackPush(istack, b.ConstI32(7));
  Stmt* top = b.AdStackLoadTop(fstack);
  b.AdStackLoadTopAdj(fstack);
  b.AdStackAccAdjoint(fstack, top);
  b.SetLocation(At(63));
  b.AdStackLoadTop(istack);
  b.AdStackPop(istack);
  b.AdStackPop(fstack);
  b.SetLocation(At(64));
  auto* checkpoints = b.AdStackAlloca(kF32, 16);
  checkpoints->set_checkpoint(0, AdStackRole::kCheckpoint);
  b.AdStackCapacity(checkpoints);
  return k;
}

std::unique_ptr<Kernel> BuildOutputKernel() {
  auto k = NewKernel("output", 70);
  k->AddParam(KernelParam::Scalar("n", kI32));
  IRBuilder b(k.get());
  b.SetLocation(At(71));
  Stmt* n = b.ArgLoad(0);
  Stmt* r = b.Random(kF32);
  Stmt* t = b.ThreadIndex();
  b.SetLocation(At(72));
  b.Print({"n = ", ", r = \"", "\", t = ", "\n"}, {"%5d", "", ""}, {n, r, t});
  return k;
}

std::unique_ptr<Kernel> BuildBitsKernel() {
  constexpr PrimitiveType kI8 = PrimitiveType::kI8;
  constexpr PrimitiveType kI16 = PrimitiveType::kI16;
  constexpr PrimitiveType kI64 = PrimitiveType::kI64;
  auto k = NewKernel("bits", 80);
  k->AddParam(KernelParam::Ndarray("f", kF32, 1));
  k->AddParam(KernelParam::Ndarray("w", kI64, 1));
  k->AddParam(KernelParam::Ndarray("s", kI16, 1));
  k->AddParam(KernelParam::Ndarray("c", kI32, 1));
  IRBuilder b(k.get());
  b.SetLocation(At(81));
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
  auto scope = b.EnterBlock(loop->body());
  Stmt* i = b.LoopIndex(loop);
  Stmt* f = b.NdarrayPtr(0, {i});
  Stmt* w = b.NdarrayPtr(1, {i});
  Stmt* s = b.NdarrayPtr(2, {i});
  Stmt* c = b.NdarrayPtr(3, {i});
  Stmt* x = b.GlobalLoad(f);
  Stmt* word = b.GlobalLoad(w);
  b.SetLocation(At(82));
  auto unary = [&](UnaryOpKind op, Stmt* v, PrimitiveType t) {
    return Typed(b.Unary(op, v), t);
  };
  auto add = [&](Stmt* p, Stmt* q) { return Typed(b.Add(p, q), kI32); };
  Stmt* counts = add(add(unary(UnaryOpKind::kClz, word, kI32),
                         unary(UnaryOpKind::kPopcnt, word, kI32)),
                     unary(UnaryOpKind::kFfs, b.Cast(word, kI8), kI32));
  Stmt* mantissa = unary(UnaryOpKind::kFrexpMantissa, x, kF32);
  Stmt* exponent = unary(UnaryOpKind::kFrexpExponent, x, kI32);
  Stmt* bits = b.BitCast(unary(UnaryOpKind::kRound, x, kF32), kI32);
  Stmt* total = add(add(counts, exponent), add(bits, b.ThreadIndex()));
  b.SetLocation(At(83));
  // 32 bits and narrower: SPIR-V for Metal has no 64-bit atomics.
  b.Atomic(AtomicOpKind::kCas, c, total, bits);
  b.Atomic(AtomicOpKind::kExchange, f, mantissa);
  b.Atomic(AtomicOpKind::kMul, s, b.Cast(total, kI16));
  b.Atomic(AtomicOpKind::kCas, s, b.Cast(exponent, kI16), b.Cast(i, kI16));
  b.Atomic(AtomicOpKind::kMul, f, x);
  return k;
}

std::unique_ptr<Kernel> BuildRealFunctionKernel() {
  auto k = NewKernel("calls", 80);
  k->AddParam(KernelParam::Scalar("n", kI32));
  const std::vector<DataType> params = {DataType::Scalar(kI32),
                                        DataType::Pointer(kI32)};
  const int fn = k->AddFunction(std::make_unique<Function>(
      *k, "tri", At(90),
      std::vector<FunctionParam>{{"v", params[0]}, {"<result 0>", params[1]}}));
  {
    // tri(v): if v == 0: return 0; return tri(v - 1) + v
    IRBuilder b(&k->functions()[fn]->scope());
    b.SetLocation(At(91));
    Stmt* v = b.Make<FuncArgStmt>(0, params[0]);
    Stmt* out = b.Make<FuncArgStmt>(1, params[1]);
    Stmt* partial = b.Alloca(kI32);
    Stmt* zero = b.ConstI32(0);
    auto* done = b.If(Typed(b.Binary(BinaryOpKind::kEq, v, zero), kU1));
    {
      auto scope = b.EnterBlock(done->true_block());
      b.GlobalStore(out, zero);
      b.Make<ReturnStmt>();
    }
    Stmt* less = Typed(b.Sub(v, b.ConstI32(1)), kI32);
    b.Make<FuncCallStmt>(fn, "tri", params, std::vector<Stmt*>{less, partial});
    b.GlobalStore(out, Typed(b.Add(b.LocalLoad(partial), v), kI32));
    b.Make<ReturnStmt>();
  }
  IRBuilder b(k.get());
  b.SetLocation(At(81));
  Stmt* result = b.Alloca(kI32);
  b.Make<FuncCallStmt>(fn, "tri", params,
                       std::vector<Stmt*>{b.ArgLoad(0), result});
  b.LocalLoad(result);
  return k;
}

int FieldZ() {
  return SampleTree().node(kPointer1D).children.back();
}

// z[i] = 1 with z's block acquired from the pointer level's pool, as the
// sparse lowering writes it.
std::unique_ptr<Kernel> BuildSparseKernel() {
  auto k = NewKernel("sparse", 100);
  k->AddParam(KernelParam::Scalar("i", kI32));
  IRBuilder b(k.get(), &SampleTree());
  b.SetLocation(At(101));
  Stmt* i = b.ArgLoad(0);
  const int table = SampleTree().node(kPointer1D).table;
  Stmt* entry = b.FieldPtr(table, {i});
  Stmt* block = b.Make<SNodeOpStmt>(SNodeOpKind::kAcquire, kPointer1D, entry);
  auto* z = b.Make<FieldPtrStmt>(FieldZ(), kF32, std::vector<Stmt*>{i}, block);
  b.GlobalStore(z, b.ConstF32(1));
  b.Make<SNodeOpStmt>(SNodeOpKind::kRelease, kPointer1D, entry);
  return k;
}

std::unique_ptr<Kernel> BuildSimtKernel() {
  constexpr PrimitiveType kU64 = PrimitiveType::kU64;
  auto k = NewKernel("simt", 90);
  k->AddParam(KernelParam::Ndarray("a", kF32, 1));
  IRBuilder b(k.get());
  b.SetLocation(At(91));
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
  loop->set_block_dim(64);
  auto scope = b.EnterBlock(loop->body());
  Stmt* i = b.LoopIndex(loop);
  Stmt* a = b.NdarrayPtr(0, {i});
  Stmt* shared = b.SharedArray(kF32, 64);
  Stmt* tid = b.SimtOp(SimtOpKind::kBlockThreadIdx, DataType::Scalar(kI32));
  b.SetLocation(At(92));
  b.GlobalStore(b.SharedPtr(shared, tid), b.GlobalLoad(a));
  b.SimtOp(SimtOpKind::kBlockSync, DataType::Void());
  Stmt* mirror = Typed(b.Sub(b.ConstI32(63), tid), kI32);
  Stmt* x = b.GlobalLoad(b.SharedPtr(shared, mirror));
  b.SetLocation(At(93));
  Stmt* down = b.SimtOp(SimtOpKind::kSubgroupShuffleDown,
                        DataType::Scalar(kF32), {x, b.ConstI32(1)});
  Stmt* lane = b.SimtOp(SimtOpKind::kSubgroupInvocationId,
                        DataType::Scalar(kI32));
  Stmt* ballot = b.SimtOp(SimtOpKind::kSubgroupBallot, DataType::Scalar(kU64),
                          {lane});
  Stmt* count = b.SimtOp(SimtOpKind::kBlockSyncCount, DataType::Scalar(kI32),
                         {b.Cast(ballot, kI32)});
  b.SetLocation(At(94));
  b.Atomic(AtomicOpKind::kAdd, b.SharedPtr(shared, tid), down);
  b.SimtOp(SimtOpKind::kGridMemFence, DataType::Void());
  b.GlobalStore(a, Typed(b.Add(down, b.Cast(count, kF32)), kF32));
  return k;
}

std::vector<SampleKernel> AllSampleKernels() {
  const VerifyOptions typed{.require_types = true, .snodes = &SampleTree()};
  const VerifyOptions untyped{.require_types = false, .snodes = &SampleTree()};
  std::vector<SampleKernel> kernels;
  kernels.push_back({BuildParamsKernel(), typed});
  kernels.push_back({BuildArithKernel(/*typed=*/false), untyped});
  kernels.push_back({BuildArithKernel(/*typed=*/true), typed});
  kernels.push_back({BuildControlFlowKernel(), typed});
  kernels.push_back({BuildOffloadedKernel(), typed});
  kernels.push_back({BuildStructForKernel(), typed});
  kernels.push_back({BuildAdStackKernel(), typed});
  kernels.push_back({BuildOutputKernel(), typed});
  kernels.push_back({BuildBitsKernel(), typed});
  kernels.push_back({BuildRealFunctionKernel(), typed});
  kernels.push_back({BuildSparseKernel(), typed});
  kernels.push_back({BuildSimtKernel(), typed});
  return kernels;
}

}  // namespace quadrants::ir::samples
