#include "quadrants/codegen/llvm/lane_emitter.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "quadrants/codegen/llvm/adstack_slots.h"
#include "quadrants/codegen/llvm/elementwise.h"
#include "quadrants/codegen/llvm/lane_forms.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/walk.h"

namespace quadrants::codegen {
namespace {

using ir::PrimitiveType;
using ir::Stmt;
using ir::StmtKind;

// Float ops with whole-vector f32 versions in the runtime module
// (qd_<op>_f32x<N>, simd_math.h); the others call the scalar function per
// lane.
bool HasVectorMath(absl::string_view name, PrimitiveType t, int lanes) {
  static const absl::flat_hash_set<absl::string_view> kOps = {
      "sin",  "cos", "tan",  "exp",  "log",
      "tanh", "pow", "asin", "acos", "atan2"};
  return t == PrimitiveType::kF32 &&
         (lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32 ||
          lanes == 64) &&
         kOps.contains(name);
}

class LaneEmitter {
 public:
  LaneEmitter(llvm::Module& module, const ir::Kernel& kernel,
              const ir::SNodeTree& snodes, const ir::OffloadedTaskStmt& task,
              int task_index, int lanes, bool ad_stack_size_forced,
              std::vector<AdStackSpec>* stacks)
      : module_(module),
        context_(module.getContext()),
        b_(context_),
        kernel_(kernel),
        snodes_(snodes),
        task_(task),
        task_index_(task_index),
        lanes_(lanes),
        forced_(ad_stack_size_forced),
        stacks_out_(stacks),
        forms_(task, LinearStructAxis(snodes, task)),
        ops_(
            b_, lanes,
            [this](const char* name, std::vector<llvm::Value*> args,
                   PrimitiveType t) { return MathCall(name, args, t); },
            [this](const char* name, llvm::Value* a, llvm::Value* b,
                   PrimitiveType t) { return IntCall(name, a, b, t); }) {}

  absl::Status Emit(const std::string& name, int vector_bits);
  int sin_cos_pairs() const { return sin_cos_pairs_; }

 private:
  enum class Access { kUniform, kContiguous, kScattered };
  struct LoopState {
    bool divergent;
    llvm::Value* alive;  // lanes still in the loop (divergent loops)
    llvm::Value* skip;   // lanes done with this iteration (divergent)
    llvm::BasicBlock* continue_to;
    llvm::BasicBlock* break_to;
  };
  struct StackState {
    int id;
    llvm::Value* region;    // lane 0's stack: the interleaved slots
    llvm::Value* count;     // i64 or <lanes x i64> alloca
    llvm::Value* capacity;  // i64
    bool per_lane;
    bool checked;
    bool adjoint;
    int64_t elem;
    int64_t slot_bytes;
    PrimitiveType dtype;
  };

  // The struct-for task's axis whose index runs with the cell number (a
  // field with one axis); -1 when none does.
  static int LinearStructAxis(const ir::SNodeTree& snodes,
                              const ir::OffloadedTaskStmt& task);

  // ---- helpers ------------------------------------------------------------
  llvm::Value* Call(const std::string& name, llvm::Type* result,
                    std::vector<llvm::Value*> args);
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, const char* name);
  llvm::Value* Splat(llvm::Value* v) { return b_.CreateVectorSplat(lanes_, v); }
  llvm::Value* Lane0(llvm::Value* v) {
    return b_.CreateExtractElement(v, uint64_t{0});
  }
  llvm::Value* LaneIds();
  llvm::Value* Any(llvm::Value* mask) { return b_.CreateOrReduce(mask); }
  // Idle lanes of masked loads read as zeros: never poison, which would
  // reach masks and branches.
  llvm::Value* Zeros(llvm::Type* element) {
    return llvm::Constant::getNullValue(ops_.Widen(element));
  }
  llvm::Value* NoLanes() {
    return llvm::ConstantInt::getFalse(ops_.Widen(b_.getInt1Ty()));
  }
  llvm::Type* Storage(PrimitiveType t) {
    return t == PrimitiveType::kU1 ? b_.getInt8Ty() : ops_.ScalarType(t);
  }
  llvm::Value* Get(const Stmt* s) { return values_.at(s); }
  // `mask` less the lanes that left the innermost loop or its iteration.
  llvm::Value* Live(llvm::Value* mask);
  void StartDeadBlock();
  // Runs `block` under `mask`, skipped when no lane is on.
  absl::Status EmitUnder(llvm::Value* mask, const ir::Block& block);
  absl::Status EmitRegion(const ir::Block& block, llvm::BasicBlock* end);
  llvm::Value* MathCall(const char* name, std::vector<llvm::Value*> args,
                        PrimitiveType t);
  // A used cos (for a sin) or sin (for a cos) of the same f32 value later in
  // `s`'s block, which one vector call then computes with it; or null.
  const Stmt* TrigPartner(const ir::UnaryOpStmt& s);
  // {sin x, cos x} of an f32 vector from one shared range reduction.
  std::pair<llvm::Value*, llvm::Value*> SinCos(llvm::Value* x);
  llvm::Value* IntCall(const char* name, llvm::Value* a, llvm::Value* b,
                       PrimitiveType t);
  llvm::Value* PerLane(const std::string& name, llvm::Type* result,
                       std::vector<llvm::Value*> args);
  std::vector<llvm::Value*> DecomposeCell(int snode, llvm::Value* linear);
  bool IsUsed(const Stmt* s);

  // ---- statements ---------------------------------------------------------
  absl::Status EmitBlock(const ir::Block& block);
  absl::Status EmitStmt(const Stmt& s);
  llvm::Value* EmitArgLoad(const ir::ArgLoadStmt& s);
  llvm::Value* EmitNdarrayPtr(const ir::NdarrayPtrStmt& s);
  absl::StatusOr<llvm::Value*> EmitFieldPtr(const ir::FieldPtrStmt& s);
  Access AccessOf(const Stmt* ptr);
  llvm::Value* EmitGlobalLoad(const Stmt& s);
  void EmitGlobalStore(const Stmt& s);
  void EmitLocalStore(const Stmt& s);
  absl::StatusOr<llvm::Value*> EmitAtomic(const ir::AtomicOpStmt& s);
  using AtomicOp = llvm::AtomicRMWInst::BinOp;
  // A sum (or min, max, ...) of one atomic's lanes over a whole chunk,
  // flushed with one atomic when the chunk ends.
  struct DeferredAtomic {
    AtomicOp op;
    llvm::AllocaInst* sum;
    llvm::AllocaInst* target;
    llvm::AllocaInst* used;
  };
  llvm::Value* AtomicIdentity(AtomicOp op, llvm::Type* scalar, int bits);
  llvm::Value* ReduceLanes(AtomicOp op, llvm::Value* lanes,
                           llvm::Value* identity);
  llvm::Value* CombineTwo(AtomicOp op, llvm::Value* a, llvm::Value* b);
  bool DefersToChunkEnd(const ir::AtomicOpStmt& s);
  llvm::Value* ApplyAtomic(AtomicOp op, llvm::Value* old, llvm::Value* value);
  // (0, snode) for a field pointer, (1, argument) for an ndarray pointer,
  // else (-1, -1).
  static std::pair<int, int> TargetOf(const Stmt* ptr);
  bool IsTaskIndex(const Stmt* s) const;
  // Whether every access of the task to `ptr`'s field or ndarray indexes
  // it by constants and, last, the task index.
  bool OwnsItsElements(const Stmt& ptr);
  DeferredAtomic& DeferredFor(const ir::AtomicOpStmt& s, AtomicOp op,
                              llvm::Type* scalar, llvm::Value* identity);
  void FlushDeferredAtomics();
  absl::Status EmitIf(const ir::IfStmt& s);
  absl::Status EmitRangeFor(const ir::RangeForStmt& s);
  absl::Status EmitStructFor(const ir::StructForStmt& s);
  absl::Status EmitWhile(const ir::WhileStmt& s);
  // A loop over a scalar counter (uniform bounds) or a per-lane one.
  absl::Status EmitLoop(
      const Stmt& loop, llvm::Value* begin, llvm::Value* end,
      bool uniform_bounds,
      const std::function<std::vector<llvm::Value*>(llvm::Value*)>& indices,
      const ir::Block& body);
  void EmitJump(const Stmt& s);
  void EmitAdStackAlloca(const ir::AdStackAllocaStmt& s);
  llvm::Value* StackTop(const StackState& st);
  // Lane 0's slot (uniform depth) or every lane's slot (per-lane depth).
  llvm::Value* StackSlot(const StackState& st, llvm::Value* index,
                         bool adjoint);
  void StackStore(const StackState& st, llvm::Value* value, llvm::Value* slot);
  llvm::Value* StackLoad(const StackState& st, llvm::Value* slot);
  void EmitAdStackPush(const ir::AdStackPushStmt& s);
  void EmitAdStackPop(const ir::AdStackPopStmt& s);
  // Starts the random streams of the iterations `index` (i64 lanes).
  void SeedRandom(llvm::Value* index);
  llvm::Value* EmitRandom(const ir::RandomStmt& s);

  llvm::Module& module_;
  llvm::LLVMContext& context_;
  llvm::IRBuilder<> b_;
  const ir::Kernel& kernel_;
  const ir::SNodeTree& snodes_;
  const ir::OffloadedTaskStmt& task_;
  const int task_index_;
  const int lanes_;
  const bool forced_;
  std::vector<AdStackSpec>* stacks_out_;
  LaneForms forms_;
  Elementwise ops_;

  llvm::Function* function_ = nullptr;
  llvm::Value* ctx_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::Value* mask_ = nullptr;
  // The qd.random() stream state of every lane (tasks that draw).
  llvm::AllocaInst* random_ = nullptr;
  absl::flat_hash_map<const Stmt*, llvm::Value*> values_;
  int sin_cos_pairs_ = 0;
  absl::flat_hash_map<const Stmt*, std::vector<llvm::Value*>> loop_indices_;
  std::vector<LoopState> loops_;
  // Where the innermost region (branch or loop body) ends: a divergent
  // break or continue skips there.
  std::vector<llvm::BasicBlock*> region_ends_;
  absl::flat_hash_map<const Stmt*, StackState> stacks_;
  absl::flat_hash_set<const Stmt*> adjoint_stacks_;
  absl::flat_hash_set<const Stmt*> used_;
  bool used_computed_ = false;
  std::vector<DeferredAtomic> deferred_;
  absl::flat_hash_map<const Stmt*, size_t> deferred_index_;
};

int LaneEmitter::LinearStructAxis(const ir::SNodeTree& snodes,
                                  const ir::OffloadedTaskStmt& task) {
  if (task.task_kind() != ir::TaskKind::kStructFor)
    return -1;
  const auto axes = CellAxes(snodes, task.snode_id());
  return axes.size() == 1 ? axes[0].first : -1;
}

llvm::Value* LaneEmitter::Call(const std::string& name, llvm::Type* result,
                               std::vector<llvm::Value*> args) {
  return CallRuntime(b_, name, result, std::move(args));
}

llvm::AllocaInst* LaneEmitter::EntryAlloca(llvm::Type* type, const char* name) {
  llvm::IRBuilder<> entry(entry_, entry_->begin());
  return entry.CreateAlloca(type, nullptr, name);
}

llvm::Value* LaneEmitter::LaneIds() {
  std::vector<llvm::Constant*> ids;
  for (int l = 0; l < lanes_; ++l)
    ids.push_back(b_.getInt64(l));
  return llvm::ConstantVector::get(ids);
}

llvm::Value* LaneEmitter::Live(llvm::Value* mask) {
  if (loops_.empty() || !loops_.back().divergent)
    return mask;
  llvm::Type* type = mask->getType();
  const LoopState& loop = loops_.back();
  if (loop.alive != nullptr)
    mask = b_.CreateAnd(mask, b_.CreateLoad(type, loop.alive));
  return b_.CreateAnd(mask, b_.CreateNot(b_.CreateLoad(type, loop.skip)));
}

void LaneEmitter::StartDeadBlock() {
  b_.SetInsertPoint(
      llvm::BasicBlock::Create(context_, "unreachable", function_));
}

absl::Status LaneEmitter::EmitRegion(const ir::Block& block,
                                     llvm::BasicBlock* end) {
  region_ends_.push_back(end);
  absl::Status status = EmitBlock(block);
  region_ends_.pop_back();
  return status;
}

absl::Status LaneEmitter::EmitUnder(llvm::Value* mask, const ir::Block& block) {
  if (block.size() == 0)
    return absl::OkStatus();
  auto* body = llvm::BasicBlock::Create(context_, "lanes.on", function_);
  auto* end = llvm::BasicBlock::Create(context_, "lanes.end", function_);
  b_.CreateCondBr(Any(mask), body, end);
  b_.SetInsertPoint(body);
  mask_ = mask;
  QD_RETURN_IF_ERROR(EmitRegion(block, end));
  b_.CreateBr(end);
  b_.SetInsertPoint(end);
  return absl::OkStatus();
}

llvm::Value* LaneEmitter::PerLane(const std::string& name, llvm::Type* result,
                                  std::vector<llvm::Value*> args) {
  llvm::Value* out = llvm::PoisonValue::get(ops_.Widen(result));
  for (int l = 0; l < lanes_; ++l) {
    std::vector<llvm::Value*> scalars;
    for (llvm::Value* a : args)
      scalars.push_back(b_.CreateExtractElement(a, uint64_t(l)));
    out = b_.CreateInsertElement(out, Call(name, result, scalars), uint64_t(l));
  }
  return out;
}

llvm::Value* LaneEmitter::MathCall(const char* name,
                                   std::vector<llvm::Value*> args,
                                   PrimitiveType t) {
  const bool f64 = t == PrimitiveType::kF64;
  llvm::Type* scalar = f64 ? b_.getDoubleTy() : b_.getFloatTy();
  if (!HasVectorMath(name, t, lanes_)) {
    return PerLane(absl::StrCat("qd_", name, f64 ? "_f64" : "_f32"), scalar,
                   std::move(args));
  }
  // void qd_<op>_f32x<N>(float* out, const float* in...), through
  // vector-aligned slots that SROA turns back into registers.
  llvm::Type* vector = ops_.Widen(scalar);
  std::vector<llvm::Value*> pointers = {EntryAlloca(vector, "math.out")};
  for (llvm::Value* a : args) {
    llvm::AllocaInst* slot = EntryAlloca(vector, "math.in");
    b_.CreateStore(a, slot);
    pointers.push_back(slot);
  }
  Call(absl::StrCat("qd_", name, "_f32x", lanes_), b_.getVoidTy(), pointers);
  return b_.CreateLoad(vector, pointers[0]);
}

// Whether `a` and `b`, operands of statements in `block`, hold one value:
// one statement, or loads of one local with no store to it between them
// (nor a statement with blocks, which might hold one).
bool SameValue(const ir::Block& block, const Stmt* a, const Stmt* b) {
  if (a == b)
    return true;
  if (!ir::Isa<ir::LocalLoadStmt>(a) || !ir::Isa<ir::LocalLoadStmt>(b) ||
      a->operand(0) != b->operand(0) || a->parent() != &block ||
      b->parent() != &block) {
    return false;
  }
  int seen = 0;
  for (const auto& stmt : block) {
    const Stmt* s = stmt.get();
    if (s == a || s == b) {
      if (++seen == 2)
        return true;
      continue;
    }
    const bool stores =
        ir::Isa<ir::LocalStoreStmt>(s) && s->operand(0) == a->operand(0);
    if (seen == 1 && (stores || !s->blocks().empty()))
      return false;
  }
  return false;
}

const Stmt* LaneEmitter::TrigPartner(const ir::UnaryOpStmt& s) {
  const bool is_sin = s.op() == ir::UnaryOpKind::kSin;
  if (!is_sin && s.op() != ir::UnaryOpKind::kCos)
    return nullptr;
  if (!HasVectorMath("sin", s.input()->type().element(), lanes_))
    return nullptr;
  const auto wanted = is_sin ? ir::UnaryOpKind::kCos : ir::UnaryOpKind::kSin;
  const ir::Block& block = *s.parent();
  bool after = false;
  for (const auto& stmt : block) {
    if (stmt.get() == &s) {
      after = true;
      continue;
    }
    const auto* other = ir::DynCast<ir::UnaryOpStmt>(stmt.get());
    if (after && other != nullptr && other->op() == wanted && IsUsed(other) &&
        !values_.contains(other) &&
        SameValue(block, s.input(), other->input())) {
      return other;
    }
  }
  return nullptr;
}

std::pair<llvm::Value*, llvm::Value*> LaneEmitter::SinCos(llvm::Value* x) {
  llvm::Type* vector = x->getType();
  llvm::AllocaInst* sin_out = EntryAlloca(vector, "sincos.sin");
  llvm::AllocaInst* cos_out = EntryAlloca(vector, "sincos.cos");
  llvm::AllocaInst* in = EntryAlloca(vector, "sincos.in");
  b_.CreateStore(x, in);
  Call(absl::StrCat("qd_sincos_f32x", lanes_), b_.getVoidTy(),
       {sin_out, cos_out, in});
  return {b_.CreateLoad(vector, sin_out), b_.CreateLoad(vector, cos_out)};
}

llvm::Value* LaneEmitter::IntCall(const char* name, llvm::Value* a,
                                  llvm::Value* b, PrimitiveType t) {
  // Narrow integers run in 32 bits with their signedness, then truncate;
  // per lane, so a zero divisor in an idle lane stays harmless.
  const bool wide = ir::BitWidth(t) == 64;
  const bool is_signed = ir::IsSigned(t);
  llvm::Type* work = wide ? b_.getInt64Ty() : b_.getInt32Ty();
  llvm::Value* x = b_.CreateIntCast(a, ops_.Widen(work), is_signed);
  llvm::Value* y = b_.CreateIntCast(b, ops_.Widen(work), is_signed);
  const char* suffix =
      wide ? (is_signed ? "_i64" : "_u64") : (is_signed ? "_i32" : "_u32");
  llvm::Value* r = PerLane(absl::StrCat("qd_", name, suffix), work, {x, y});
  return b_.CreateIntCast(r, ops_.RegisterType(t), is_signed);
}

std::vector<llvm::Value*> LaneEmitter::DecomposeCell(int snode,
                                                     llvm::Value* linear) {
  return ops_.DecomposeCell(CellAxes(snodes_, snode), linear);
}

bool LaneEmitter::IsUsed(const Stmt* s) {
  if (!used_computed_) {
    ir::WalkKernel(kernel_, [&](const Stmt* stmt) {
      for (const Stmt* operand : stmt->operands())
        used_.insert(operand);
    });
    used_computed_ = true;
  }
  return used_.contains(s);
}

absl::Status LaneEmitter::Emit(const std::string& name, int vector_bits) {
  llvm::Type* i64 = b_.getInt64Ty();
  auto* type = llvm::FunctionType::get(
      b_.getVoidTy(), {b_.getPtrTy(), i64, i64, b_.getInt32Ty()}, false);
  function_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                     name, module_);
  // Whole-register vectors: without these x86 splits 512-bit operations.
  const std::string bits = absl::StrCat(vector_bits);
  function_->addFnAttr("min-legal-vector-width", bits);
  function_->addFnAttr("prefer-vector-width", bits);
  ctx_ = function_->getArg(0);
  entry_ = llvm::BasicBlock::Create(context_, "entry", function_);
  b_.SetInsertPoint(entry_);
  adjoint_stacks_ = StacksWithAdjoints(kernel_);

  llvm::Value* begin = function_->getArg(1);
  llvm::Value* end = function_->getArg(2);
  llvm::AllocaInst* counter = EntryAlloca(i64, "step");
  b_.CreateStore(begin, counter);
  auto* header = llvm::BasicBlock::Create(context_, "step.header", function_);
  auto* body = llvm::BasicBlock::Create(context_, "step.body", function_);
  auto* latch = llvm::BasicBlock::Create(context_, "step.latch", function_);
  auto* exit = llvm::BasicBlock::Create(context_, "step.exit", function_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::Value* base = b_.CreateLoad(i64, counter);
  b_.CreateCondBr(b_.CreateICmpSLT(base, end), body, exit);
  b_.SetInsertPoint(body);
  llvm::Value* index = b_.CreateAdd(Splat(base), LaneIds());
  mask_ = b_.CreateICmpSLT(index, Splat(end));
  LoopState loop{forms_.HasDivergentExits(&task_), nullptr, nullptr, latch,
                 nullptr};
  if (loop.divergent) {
    loop.skip = EntryAlloca(mask_->getType(), "skip");
    b_.CreateStore(NoLanes(), loop.skip);
  }
  loops_.push_back(loop);
  if (task_.task_kind() == ir::TaskKind::kRangeFor) {
    const PrimitiveType t = task_.begin()->type().element();
    loop_indices_[&task_] = {
        b_.CreateIntCast(index, ops_.RegisterType(t), ir::IsSigned(t))};
  } else {
    loop_indices_[&task_] = DecomposeCell(task_.snode_id(), index);
  }
  SeedRandom(index);
  QD_RETURN_IF_ERROR(EmitRegion(*task_.body(), latch));
  loops_.pop_back();
  b_.CreateBr(latch);
  b_.SetInsertPoint(latch);
  b_.CreateStore(b_.CreateAdd(base, b_.getInt64(lanes_)), counter);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  FlushDeferredAtomics();
  b_.CreateRetVoid();
  return absl::OkStatus();
}

absl::Status LaneEmitter::EmitBlock(const ir::Block& block) {
  for (const auto& stmt : block)
    QD_RETURN_IF_ERROR(EmitStmt(*stmt));
  return absl::OkStatus();
}

llvm::Value* LaneEmitter::EmitArgLoad(const ir::ArgLoadStmt& s) {
  llvm::Value* slot =
      Call("qd_arg", b_.getInt64Ty(), {ctx_, b_.getInt32(s.arg())});
  return Splat(ops_.DecodeArgument(slot, s.type().element()));
}

llvm::Value* LaneEmitter::EmitNdarrayPtr(const ir::NdarrayPtrStmt& s) {
  const ir::KernelParam& param = kernel_.params()[s.arg()];
  llvm::Value* data =
      Call("qd_ndarray_data", b_.getPtrTy(), {ctx_, b_.getInt32(s.arg())});
  llvm::Value* linear = Splat(b_.getInt64(0));
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    llvm::Value* extent = Call("qd_ndarray_shape", b_.getInt64Ty(),
                               {ctx_, b_.getInt32(s.arg()), b_.getInt32(axis)});
    llvm::Value* index =
        ops_.ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    linear = b_.CreateAdd(b_.CreateMul(linear, Splat(extent)), index);
  }
  return b_.CreateGEP(Storage(param.dtype), data, linear);
}

absl::StatusOr<llvm::Value*> LaneEmitter::EmitFieldPtr(
    const ir::FieldPtrStmt& s) {
  absl::StatusOr<ir::PlaceLayout> layout = snodes_.Layout(s.snode_id());
  if (!layout.ok())
    return layout.status();
  llvm::Value* offset = Splat(b_.getInt64(layout->offset));
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    llvm::Value* index =
        ops_.ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    offset = b_.CreateAdd(
        offset,
        b_.CreateMul(index, Splat(b_.getInt64(layout->axis_stride[axis]))));
  }
  llvm::Value* root = Call("qd_root", b_.getPtrTy(), {ctx_});
  return b_.CreateGEP(b_.getInt8Ty(), root, offset);
}

LaneEmitter::Access LaneEmitter::AccessOf(const Stmt* ptr) {
  if (forms_.Uniform(ptr))
    return Access::kUniform;
  if (!forms_.LastIndexLinear(ptr))
    return Access::kScattered;
  if (const auto* field = ir::DynCast<ir::FieldPtrStmt>(ptr)) {
    absl::StatusOr<ir::PlaceLayout> layout = snodes_.Layout(field->snode_id());
    const PrimitiveType t = ptr->type().element();
    const int64_t bytes = AdStackElementBytes(t);
    if (!layout.ok() || layout->axis_stride.empty() ||
        layout->axis_stride.back() != bytes) {
      return Access::kScattered;
    }
  }
  return Access::kContiguous;
}

llvm::Value* LaneEmitter::EmitGlobalLoad(const Stmt& s) {
  const PrimitiveType t = s.type().element();
  llvm::Type* storage = Storage(t);
  llvm::Value* ptrs = Get(s.operand(0));
  const llvm::Align align(storage->getPrimitiveSizeInBits() / 8);
  llvm::Value* v = nullptr;
  switch (AccessOf(s.operand(0))) {
    case Access::kUniform:
      // Some lane is on, and all would read this one address.
      v = Splat(b_.CreateLoad(storage, Lane0(ptrs)));
      break;
    case Access::kContiguous:
      v = b_.CreateMaskedLoad(ops_.Widen(storage), Lane0(ptrs), align, mask_,
                              Zeros(storage));
      break;
    case Access::kScattered:
      v = b_.CreateMaskedGather(ops_.Widen(storage), ptrs, align, mask_,
                                Zeros(storage));
      break;
  }
  if (t == PrimitiveType::kU1)
    v = b_.CreateICmpNE(v, Splat(b_.getInt8(0)));
  return v;
}

void LaneEmitter::EmitGlobalStore(const Stmt& s) {
  const PrimitiveType t = s.operand(1)->type().element();
  llvm::Value* v = Get(s.operand(1));
  if (t == PrimitiveType::kU1)
    v = b_.CreateZExt(v, ops_.Widen(b_.getInt8Ty()));
  llvm::Value* ptrs = Get(s.operand(0));
  const llvm::Align align(Storage(t)->getPrimitiveSizeInBits() / 8);
  if (AccessOf(s.operand(0)) == Access::kContiguous) {
    b_.CreateMaskedStore(v, Lane0(ptrs), align, mask_);
  } else {
    // One address for all lanes: the last active lane's value lands, as
    // some iteration's would.
    b_.CreateMaskedScatter(v, ptrs, align, mask_);
  }
}

void LaneEmitter::EmitLocalStore(const Stmt& s) {
  llvm::Value* slot = Get(s.operand(0));
  llvm::Value* v = Get(s.operand(1));
  if (forms_.UnderVaryingControl(&s)) {
    // Idle lanes keep their values.
    v = b_.CreateSelect(mask_, v, b_.CreateLoad(v->getType(), slot));
  }
  b_.CreateStore(v, slot);
}

llvm::Value* LaneEmitter::AtomicIdentity(AtomicOp op, llvm::Type* scalar,
                                         int bits) {
  switch (op) {
    case AtomicOp::FAdd:
    case AtomicOp::FSub:
      return llvm::ConstantFP::getNegativeZero(scalar);
    case AtomicOp::FMin:
      return llvm::ConstantFP::getInfinity(scalar, false);
    case AtomicOp::FMax:
      return llvm::ConstantFP::getInfinity(scalar, true);
    case AtomicOp::Min:
      return b_.getInt(llvm::APInt::getSignedMaxValue(bits));
    case AtomicOp::Max:
      return b_.getInt(llvm::APInt::getSignedMinValue(bits));
    case AtomicOp::UMin:
    case AtomicOp::And:
      return b_.getInt(llvm::APInt::getAllOnes(bits));
    default:  // Add, Sub, UMax, Or, Xor
      return llvm::ConstantInt::get(scalar, 0);
  }
}

llvm::Value* LaneEmitter::ReduceLanes(AtomicOp op, llvm::Value* lanes,
                                      llvm::Value* identity) {
  switch (op) {
    case AtomicOp::FAdd:
    case AtomicOp::FSub:
      return b_.CreateFAddReduce(identity, lanes);
    case AtomicOp::FMin:
      return b_.CreateFPMinReduce(lanes);
    case AtomicOp::FMax:
      return b_.CreateFPMaxReduce(lanes);
    case AtomicOp::Add:
    case AtomicOp::Sub:
      return b_.CreateAddReduce(lanes);
    case AtomicOp::Min:
    case AtomicOp::UMin:
      return b_.CreateIntMinReduce(lanes, op == AtomicOp::Min);
    case AtomicOp::Max:
    case AtomicOp::UMax:
      return b_.CreateIntMaxReduce(lanes, op == AtomicOp::Max);
    case AtomicOp::And:
      return b_.CreateAndReduce(lanes);
    case AtomicOp::Or:
      return b_.CreateOrReduce(lanes);
    default:
      return b_.CreateXorReduce(lanes);
  }
}

llvm::Value* LaneEmitter::CombineTwo(AtomicOp op, llvm::Value* a,
                                     llvm::Value* b) {
  switch (op) {
    case AtomicOp::FAdd:
    case AtomicOp::FSub:
      return b_.CreateFAdd(a, b);
    case AtomicOp::FMin:
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, b);
    case AtomicOp::FMax:
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, b);
    case AtomicOp::Add:
    case AtomicOp::Sub:
      return b_.CreateAdd(a, b);
    case AtomicOp::Min:
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, b);
    case AtomicOp::UMin:
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, a, b);
    case AtomicOp::Max:
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, b);
    case AtomicOp::UMax:
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, a, b);
    case AtomicOp::And:
      return b_.CreateAnd(a, b);
    case AtomicOp::Or:
      return b_.CreateOr(a, b);
    default:
      return b_.CreateXor(a, b);
  }
}

llvm::Value* LaneEmitter::ApplyAtomic(AtomicOp op, llvm::Value* old,
                                      llvm::Value* value) {
  switch (op) {
    case AtomicOp::FSub:
      return b_.CreateFSub(old, value);
    case AtomicOp::Sub:
      return b_.CreateSub(old, value);
    default:
      return CombineTwo(op, old, value);
  }
}

bool LaneEmitter::IsTaskIndex(const Stmt* s) const {
  // Through widening integer casts, which keep distinct values distinct.
  while (const auto* cast = ir::DynCast<ir::UnaryOpStmt>(s)) {
    if (cast->op() != ir::UnaryOpKind::kCast ||
        forms_.Form(cast) != LaneForm::kLinear) {
      return false;
    }
    s = cast->input();
  }
  const auto* index = ir::DynCast<ir::LoopIndexStmt>(s);
  return index != nullptr && index->loop() == &task_ &&
         forms_.Form(index) == LaneForm::kLinear;
}

bool LaneEmitter::OwnsItsElements(const Stmt& ptr) {
  // Every access the task makes to this field or ndarray is at [constants...,
  // task index]: iteration e alone touches the elements of last index e.
  const std::pair<int, int> target = TargetOf(&ptr);
  if (target.first < 0)
    return false;
  bool ok = true;
  ir::WalkBlock(*task_.body(), [&](const Stmt* stmt) {
    // Two ndarray arguments may be one array: then every ndarray access
    // must follow the rule.
    const std::pair<int, int> other = TargetOf(stmt);
    if (other != target && !(target.first == 1 && other.first == 1))
      return;
    const size_t n = stmt->num_operands();
    ok = ok && n > 0 && IsTaskIndex(stmt->operand(n - 1));
    for (size_t k = 0; k + 1 < n; ++k)
      ok = ok && ir::Isa<ir::ConstStmt>(stmt->operand(k));
  });
  return ok;
}

std::pair<int, int> LaneEmitter::TargetOf(const Stmt* ptr) {
  if (const auto* field = ir::DynCast<ir::FieldPtrStmt>(ptr))
    return {0, field->snode_id()};
  if (const auto* array = ir::DynCast<ir::NdarrayPtrStmt>(ptr))
    return {1, array->arg()};
  return {-1, -1};
}

bool LaneEmitter::DefersToChunkEnd(const ir::AtomicOpStmt& s) {
  // The target's address is a constant (constant indices), and every access
  // the task makes to that field or ndarray is an atomic of this kind whose
  // old value nobody reads: no iteration can observe a partial sum, so the
  // chunk's sum may land at its end.
  const std::pair<int, int> target = TargetOf(s.ptr());
  if (target.first < 0)
    return false;
  bool ok = true;
  ir::WalkBlock(*task_.body(), [&](const Stmt* stmt) {
    for (size_t k = 0; k < stmt->num_operands(); ++k) {
      const Stmt* ptr = stmt->operand(k);
      if (TargetOf(ptr) != target)
        continue;
      for (const Stmt* index : ptr->operands())
        ok = ok && ir::Isa<ir::ConstStmt>(index);
      const auto* atomic = ir::DynCast<ir::AtomicOpStmt>(stmt);
      ok = ok && atomic != nullptr && k == 0 && atomic->op() == s.op() &&
           !IsUsed(atomic);
    }
  });
  return ok;
}

LaneEmitter::DeferredAtomic& LaneEmitter::DeferredFor(const ir::AtomicOpStmt& s,
                                                      AtomicOp op,
                                                      llvm::Type* scalar,
                                                      llvm::Value* identity) {
  auto it = deferred_index_.find(&s);
  if (it != deferred_index_.end())
    return deferred_[it->second];
  DeferredAtomic d{op, EntryAlloca(scalar, "chunk.sum"),
                   EntryAlloca(b_.getPtrTy(), "chunk.target"),
                   EntryAlloca(b_.getInt1Ty(), "chunk.used")};
  // The entry block's stores run before any step.
  llvm::IRBuilder<> entry(entry_->getTerminator());
  entry.CreateStore(identity, d.sum);
  entry.CreateStore(entry.getFalse(), d.used);
  deferred_index_[&s] = deferred_.size();
  deferred_.push_back(d);
  return deferred_.back();
}

void LaneEmitter::FlushDeferredAtomics() {
  for (const DeferredAtomic& d : deferred_) {
    auto* flush = llvm::BasicBlock::Create(context_, "chunk.flush", function_);
    auto* next = llvm::BasicBlock::Create(context_, "chunk.next", function_);
    b_.CreateCondBr(b_.CreateLoad(b_.getInt1Ty(), d.used), flush, next);
    b_.SetInsertPoint(flush);
    llvm::Type* type = d.sum->getAllocatedType();
    b_.CreateAtomicRMW(d.op, b_.CreateLoad(b_.getPtrTy(), d.target),
                       b_.CreateLoad(type, d.sum), llvm::MaybeAlign(),
                       llvm::AtomicOrdering::Monotonic);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
}

absl::StatusOr<llvm::Value*> LaneEmitter::EmitAtomic(
    const ir::AtomicOpStmt& s) {
  const PrimitiveType t = s.type().element();
  using Op = llvm::AtomicRMWInst::BinOp;
  QD_ASSIGN_OR_RETURN(const Op op, AtomicBinOp(s, kernel_.name()));
  llvm::Value* value = Get(s.value());
  llvm::Value* ptrs = Get(s.ptr());
  if (t == PrimitiveType::kU1)
    value = b_.CreateZExt(value, ops_.Widen(b_.getInt8Ty()));
  llvm::Type* scalar = value->getType()->getScalarType();
  if (forms_.Uniform(s.ptr()) && !IsUsed(&s) && t != PrimitiveType::kU1 &&
      t != PrimitiveType::kF16) {
    // One address for every lane: combine the active lanes first.
    llvm::Value* identity = AtomicIdentity(op, scalar, ir::BitWidth(t));
    llvm::Value* total = ReduceLanes(
        op, b_.CreateSelect(mask_, value, Splat(identity)), identity);
    if (DefersToChunkEnd(s)) {
      // Nothing in the task reads the target: one atomic per chunk.
      DeferredAtomic& d = DeferredFor(s, op, scalar, identity);
      b_.CreateStore(CombineTwo(op, b_.CreateLoad(scalar, d.sum), total),
                     d.sum);
      b_.CreateStore(Lane0(ptrs), d.target);
      b_.CreateStore(b_.getTrue(), d.used);
    } else {
      b_.CreateAtomicRMW(op, Lane0(ptrs), total, llvm::MaybeAlign(),
                         llvm::AtomicOrdering::Monotonic);
    }
    return llvm::PoisonValue::get(ops_.RegisterType(t));  // nobody reads it
  }
  if (t != PrimitiveType::kU1 && t != PrimitiveType::kF16 &&
      AccessOf(s.ptr()) == Access::kContiguous && OwnsItsElements(*s.ptr())) {
    // Each element belongs to one iteration: a plain vector read-modify-
    // write of the active lanes.
    const llvm::Align align(ir::BitWidth(t) / 8);
    llvm::Value* first = Lane0(ptrs);
    llvm::Value* old = b_.CreateMaskedLoad(value->getType(), first, align,
                                           mask_, Zeros(scalar));
    b_.CreateMaskedStore(ApplyAtomic(op, old, value), first, align, mask_);
    return old;
  }
  // Otherwise one atomic per active lane, in lane order.
  llvm::AllocaInst* result =
      EntryAlloca(llvm::ArrayType::get(scalar, lanes_), "atomic.old");
  b_.CreateStore(llvm::Constant::getNullValue(value->getType()), result);
  for (int l = 0; l < lanes_; ++l) {
    auto* on = llvm::BasicBlock::Create(context_, "atomic.lane", function_);
    auto* next = llvm::BasicBlock::Create(context_, "atomic.next", function_);
    b_.CreateCondBr(b_.CreateExtractElement(mask_, uint64_t(l)), on, next);
    b_.SetInsertPoint(on);
    llvm::Value* old =
        b_.CreateAtomicRMW(op, b_.CreateExtractElement(ptrs, uint64_t(l)),
                           b_.CreateExtractElement(value, uint64_t(l)),
                           llvm::MaybeAlign(), llvm::AtomicOrdering::Monotonic);
    b_.CreateStore(
        old, b_.CreateConstGEP2_32(result->getAllocatedType(), result, 0, l));
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
  llvm::Value* old = b_.CreateLoad(value->getType(), result);
  if (t == PrimitiveType::kU1)
    old = b_.CreateICmpNE(old, Splat(b_.getInt8(0)));
  return old;
}

absl::Status LaneEmitter::EmitIf(const ir::IfStmt& s) {
  llvm::Value* cond = ops_.AsBool(Get(s.cond()), s.cond()->type().element());
  llvm::Value* entry = mask_;
  if (forms_.Uniform(s.cond())) {
    auto* then_bb = llvm::BasicBlock::Create(context_, "if.then", function_);
    auto* else_bb = llvm::BasicBlock::Create(context_, "if.else", function_);
    auto* merge = llvm::BasicBlock::Create(context_, "if.end", function_);
    b_.CreateCondBr(Lane0(cond), then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    QD_RETURN_IF_ERROR(EmitRegion(*s.true_block(), merge));
    b_.CreateBr(merge);
    b_.SetInsertPoint(else_bb);
    mask_ = entry;
    QD_RETURN_IF_ERROR(EmitRegion(*s.false_block(), merge));
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
  } else {
    QD_RETURN_IF_ERROR(EmitUnder(b_.CreateAnd(entry, cond), *s.true_block()));
    QD_RETURN_IF_ERROR(EmitUnder(b_.CreateAnd(Live(entry), b_.CreateNot(cond)),
                                 *s.false_block()));
  }
  mask_ = Live(entry);
  if (!loops_.empty() && loops_.back().divergent) {
    // A break or continue in the branches may have taken every lane: the
    // rest of the region is for lanes still on (and must not read memory
    // for none).
    auto* rest = llvm::BasicBlock::Create(context_, "lanes.rest", function_);
    b_.CreateCondBr(Any(mask_), rest, region_ends_.back());
    b_.SetInsertPoint(rest);
  }
  return absl::OkStatus();
}

absl::Status LaneEmitter::EmitLoop(
    const Stmt& loop, llvm::Value* begin, llvm::Value* end, bool uniform_bounds,
    const std::function<std::vector<llvm::Value*>(llvm::Value*)>& indices,
    const ir::Block& body) {
  llvm::Value* entry = mask_;
  llvm::Type* mask_type = entry->getType();
  LoopState state{forms_.HasDivergentExits(&loop), nullptr, nullptr, nullptr,
                  nullptr};
  auto* header = llvm::BasicBlock::Create(context_, "loop.header", function_);
  auto* body_bb = llvm::BasicBlock::Create(context_, "loop.body", function_);
  auto* latch = llvm::BasicBlock::Create(context_, "loop.latch", function_);
  auto* exit = llvm::BasicBlock::Create(context_, "loop.exit", function_);
  state.continue_to = latch;
  state.break_to = exit;
  if (state.divergent) {
    state.alive = EntryAlloca(mask_type, "alive");
    state.skip = EntryAlloca(mask_type, "skip");
    b_.CreateStore(entry, state.alive);
  }
  // A uniform counter is scalar; a per-lane one (varying begin or end) is
  // a vector whose finished lanes drop out of the mask.
  llvm::AllocaInst* counter = EntryAlloca(begin->getType(), "i");
  b_.CreateStore(begin, counter);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::Value* i = b_.CreateLoad(begin->getType(), counter);
  llvm::Value* active = entry;
  llvm::Value* go = nullptr;
  if (uniform_bounds) {
    go = b_.CreateICmpSLT(i, end);
    if (state.divergent) {
      active = b_.CreateLoad(mask_type, state.alive);
      go = b_.CreateAnd(go, Any(active));
    }
  } else {
    active = b_.CreateAnd(entry, b_.CreateICmpSLT(i, end));
    if (state.divergent)
      active = b_.CreateAnd(active, b_.CreateLoad(mask_type, state.alive));
    go = Any(active);
  }
  b_.CreateCondBr(go, body_bb, exit);
  b_.SetInsertPoint(body_bb);
  if (state.divergent)
    b_.CreateStore(NoLanes(), state.skip);
  mask_ = active;
  loop_indices_[&loop] = indices(uniform_bounds ? Splat(i) : i);
  loops_.push_back(state);
  absl::Status status = EmitRegion(body, latch);
  loops_.pop_back();
  QD_RETURN_IF_ERROR(status);
  b_.CreateBr(latch);
  b_.SetInsertPoint(latch);
  llvm::Value* current = b_.CreateLoad(begin->getType(), counter);
  llvm::Value* one = llvm::ConstantInt::get(begin->getType(), 1);
  b_.CreateStore(b_.CreateAdd(current, one), counter);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  mask_ = entry;
  return absl::OkStatus();
}

absl::Status LaneEmitter::EmitRangeFor(const ir::RangeForStmt& s) {
  const PrimitiveType t = s.begin()->type().element();
  llvm::Value* begin = ops_.ToI64(Get(s.begin()), t);
  llvm::Value* end = ops_.ToI64(Get(s.end()), t);
  const bool uniform = forms_.Uniform(s.begin()) && forms_.Uniform(s.end());
  if (uniform) {
    begin = Lane0(begin);
    end = Lane0(end);
  }
  return EmitLoop(
      s, begin, end, uniform,
      [&](llvm::Value* i) -> std::vector<llvm::Value*> {
        return {b_.CreateIntCast(i, ops_.RegisterType(t), ir::IsSigned(t))};
      },
      *s.body());
}

absl::Status LaneEmitter::EmitStructFor(const ir::StructForStmt& s) {
  int64_t cells = 1;
  for (const auto& axis : CellAxes(snodes_, s.snode_id()))
    cells *= axis.second;
  return EmitLoop(
      s, b_.getInt64(0), b_.getInt64(cells), true,
      [&](llvm::Value* i) { return DecomposeCell(s.snode_id(), i); },
      *s.body());
}

absl::Status LaneEmitter::EmitWhile(const ir::WhileStmt& s) {
  // `while True` with breaks: lanes leave as they break.
  llvm::Value* entry = mask_;
  LoopState state{forms_.HasDivergentExits(&s), nullptr, nullptr, nullptr,
                  nullptr};
  auto* header = llvm::BasicBlock::Create(context_, "while.header", function_);
  auto* body = llvm::BasicBlock::Create(context_, "while.body", function_);
  auto* exit = llvm::BasicBlock::Create(context_, "while.exit", function_);
  state.continue_to = header;
  state.break_to = exit;
  if (state.divergent) {
    state.alive = EntryAlloca(entry->getType(), "alive");
    state.skip = EntryAlloca(entry->getType(), "skip");
    b_.CreateStore(entry, state.alive);
  }
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  if (state.divergent) {
    llvm::Value* alive = b_.CreateLoad(entry->getType(), state.alive);
    b_.CreateCondBr(Any(alive), body, exit);
    b_.SetInsertPoint(body);
    b_.CreateStore(NoLanes(), state.skip);
    mask_ = alive;
  } else {
    b_.CreateBr(body);
    b_.SetInsertPoint(body);
    mask_ = entry;
  }
  loops_.push_back(state);
  absl::Status status = EmitRegion(*s.body(), header);
  loops_.pop_back();
  QD_RETURN_IF_ERROR(status);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  mask_ = entry;
  return absl::OkStatus();
}

void LaneEmitter::EmitJump(const Stmt& s) {
  const LoopState& loop = loops_.back();
  const bool is_break = s.kind() == StmtKind::kBreak;
  if (!loop.divergent) {
    b_.CreateBr(is_break ? loop.break_to : loop.continue_to);
    StartDeadBlock();
    return;
  }
  // The active lanes leave the loop (break) or this iteration (continue);
  // the rest of this region is theirs alone, so it is skipped.
  llvm::Type* type = mask_->getType();
  if (is_break) {
    llvm::Value* alive = b_.CreateLoad(type, loop.alive);
    b_.CreateStore(b_.CreateAnd(alive, b_.CreateNot(mask_)), loop.alive);
  } else {
    llvm::Value* skip = b_.CreateLoad(type, loop.skip);
    b_.CreateStore(b_.CreateOr(skip, mask_), loop.skip);
  }
  b_.CreateBr(region_ends_.back());
  StartDeadBlock();
}

void LaneEmitter::EmitAdStackAlloca(const ir::AdStackAllocaStmt& s) {
  const PrimitiveType t = s.dtype();
  const bool adjoint = ir::IsFloat(t) && adjoint_stacks_.contains(&s);
  AdStackSpec spec = DescribeAdStack(s, adjoint);
  const int id = static_cast<int>(stacks_out_->size());
  stacks_out_->push_back(spec);
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Value* heap = Call("qd_adstack_heap", b_.getPtrTy(), {ctx_});
  llvm::Value* offset = Call("qd_adstack_offset", i64, {ctx_, b_.getInt32(id)});
  llvm::Value* capacity =
      Call("qd_adstack_max_size", i64, {ctx_, b_.getInt32(id)});
  llvm::Value* stride = Call("qd_adstack_stride", i64, {ctx_});
  // Thread t owns `lanes` consecutive thread slices; in them, element word
  // w of lane l's stack sits at (offset + w * elem) * lanes + l * elem.
  llvm::Value* thread = b_.CreateSExt(function_->getArg(3), i64);
  llvm::Value* lanes = b_.getInt64(lanes_);
  llvm::Value* region = b_.CreateGEP(
      b_.getInt8Ty(), heap,
      b_.CreateMul(b_.CreateAdd(b_.CreateMul(thread, stride), offset), lanes));
  const bool per_lane = forms_.HasPerLaneDepth(&s);
  llvm::Type* count_type = per_lane ? ops_.Widen(i64) : i64;
  llvm::AllocaInst* count = EntryAlloca(count_type, "adstack.count");
  b_.CreateStore(llvm::Constant::getNullValue(count_type), count);
  const bool exact = (s.max_size() > 0 || s.size_expr()) && !forced_;
  stacks_[&s] = {id,
                 region,
                 count,
                 capacity,
                 per_lane,
                 !exact,
                 adjoint,
                 AdStackElementBytes(t),
                 spec.slot_bytes,
                 t};
  values_[&s] = region;
}

llvm::Value* LaneEmitter::StackTop(const StackState& st) {
  llvm::Type* type =
      st.per_lane ? ops_.Widen(b_.getInt64Ty()) : b_.getInt64Ty();
  llvm::Value* top = b_.CreateSub(b_.CreateLoad(type, st.count),
                                  llvm::ConstantInt::get(type, 1));
  // An empty stack reads slot 0 instead of underflowing (checked stacks).
  if (st.checked) {
    top = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, top,
                                   llvm::ConstantInt::get(type, 0));
  }
  return top;
}

llvm::Value* LaneEmitter::StackSlot(const StackState& st, llvm::Value* index,
                                    bool adjoint) {
  // Element word of slot `index`: (8 + index * slot + adjoint part) / elem.
  llvm::Type* type = index->getType();
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(type, v); };
  llvm::Value* word =
      b_.CreateAdd(c((8 + (adjoint ? st.elem : 0)) / st.elem),
                   b_.CreateMul(index, c(st.slot_bytes / st.elem)));
  llvm::Value* offset = b_.CreateMul(word, c(st.elem * lanes_));
  if (st.per_lane) {
    offset = b_.CreateAdd(offset,
                          b_.CreateMul(LaneIds(), Splat(b_.getInt64(st.elem))));
  }
  return b_.CreateGEP(b_.getInt8Ty(), st.region, offset);
}

void LaneEmitter::StackStore(const StackState& st, llvm::Value* value,
                             llvm::Value* slot) {
  if (st.dtype == PrimitiveType::kU1)
    value = b_.CreateZExt(value, ops_.Widen(b_.getInt8Ty()));
  const llvm::Align align(st.elem);
  if (st.per_lane)
    b_.CreateMaskedScatter(value, slot, align, mask_);
  else
    b_.CreateMaskedStore(value, slot, align, mask_);
}

llvm::Value* LaneEmitter::StackLoad(const StackState& st, llvm::Value* slot) {
  llvm::Type* type = ops_.Widen(Storage(st.dtype));
  const llvm::Align align(st.elem);
  llvm::Value* zeros = Zeros(Storage(st.dtype));
  llvm::Value* v = st.per_lane
                       ? b_.CreateMaskedGather(type, slot, align, mask_, zeros)
                       : b_.CreateMaskedLoad(type, slot, align, mask_, zeros);
  if (st.dtype == PrimitiveType::kU1)
    v = b_.CreateICmpNE(v, Splat(b_.getInt8(0)));
  return v;
}

void LaneEmitter::EmitAdStackPush(const ir::AdStackPushStmt& s) {
  const StackState& st = stacks_.at(s.stack());
  llvm::Type* type =
      st.per_lane ? ops_.Widen(b_.getInt64Ty()) : b_.getInt64Ty();
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(type, v); };
  llvm::Value* count = b_.CreateLoad(type, st.count);
  PushTarget target = {count, b_.CreateAdd(count, c(1))};
  if (st.checked) {
    llvm::Value* capacity = st.per_lane ? Splat(st.capacity) : st.capacity;
    llvm::Value* fits = b_.CreateICmpSLT(count, capacity);
    llvm::Value* full = b_.CreateNot(fits);
    if (st.per_lane)
      full = Any(b_.CreateAnd(full, mask_));
    target = EmitCheckedPushTarget(b_, count, capacity, fits, full, [&] {
      Call("qd_adstack_overflow", b_.getVoidTy(), {ctx_, b_.getInt32(st.id)});
    });
  }
  StackStore(st, Get(s.value()), StackSlot(st, target.index, false));
  if (st.adjoint) {
    StackStore(st,
               llvm::Constant::getNullValue(
                   ops_.RegisterType(s.value()->type().element())),
               StackSlot(st, target.index, true));
  }
  llvm::Value* next = target.next;
  if (st.per_lane)
    next = b_.CreateSelect(mask_, next, count);
  b_.CreateStore(next, st.count);
}

void LaneEmitter::SeedRandom(llvm::Value* index) {
  bool draws = false;
  ir::WalkBlock(*task_.body(), [&](const Stmt* s) {
    draws = draws || ir::Isa<ir::RandomStmt>(s);
  });
  if (!draws)
    return;
  random_ = EntryAlloca(index->getType(), "random");
  llvm::AllocaInst* iterations = EntryAlloca(index->getType(), "iterations");
  b_.CreateStore(index, iterations);
  Call(absl::StrCat("qd_random_seed_x", lanes_), b_.getVoidTy(),
       {ctx_, b_.getInt32(task_index_), iterations, random_});
}

llvm::Value* LaneEmitter::EmitRandom(const ir::RandomStmt& s) {
  llvm::Type* type = random_->getAllocatedType();
  llvm::Value* before = b_.CreateLoad(type, random_);
  llvm::AllocaInst* bits = EntryAlloca(type, "random.bits");
  Call(absl::StrCat("qd_random_next_x", lanes_), b_.getVoidTy(),
       {random_, bits});
  // Idle lanes do not draw: their streams stay where they were.
  b_.CreateStore(b_.CreateSelect(mask_, b_.CreateLoad(type, random_), before),
                 random_);
  return ops_.FromRandomBits(b_.CreateLoad(type, bits), s.type().element());
}

void LaneEmitter::EmitAdStackPop(const ir::AdStackPopStmt& s) {
  const StackState& st = stacks_.at(s.stack());
  llvm::Type* type =
      st.per_lane ? ops_.Widen(b_.getInt64Ty()) : b_.getInt64Ty();
  llvm::Value* count = b_.CreateLoad(type, st.count);
  llvm::Value* next = b_.CreateSub(count, llvm::ConstantInt::get(type, 1));
  if (st.checked) {
    next = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, next,
                                    llvm::ConstantInt::get(type, 0));
  }
  if (st.per_lane)
    next = b_.CreateSelect(mask_, next, count);
  b_.CreateStore(next, st.count);
}

absl::Status LaneEmitter::EmitStmt(const Stmt& s) {
  auto set = [&](llvm::Value* v) {
    values_[&s] = v;
    return absl::OkStatus();
  };
  auto unsupported = [&](absl::string_view what) {
    return MakeError(ErrorKind::kCompilation, s.loc(),
                     absl::StrCat("in kernel '", kernel_.name(), "': ", what,
                                  " has no SIMD-lane lowering"));
  };
  switch (s.kind()) {
    case StmtKind::kConst:
      return set(ops_.Constant(static_cast<const ir::ConstStmt&>(s).value()));
    case StmtKind::kArgLoad:
      return set(EmitArgLoad(static_cast<const ir::ArgLoadStmt&>(s)));
    case StmtKind::kNdarrayShape: {
      const auto& shape = static_cast<const ir::NdarrayShapeStmt&>(s);
      return set(Splat(b_.CreateTrunc(
          Call("qd_ndarray_shape", b_.getInt64Ty(),
               {ctx_, b_.getInt32(shape.arg()), b_.getInt32(shape.axis())}),
          b_.getInt32Ty())));
    }
    case StmtKind::kNdarrayPtr:
      return set(EmitNdarrayPtr(static_cast<const ir::NdarrayPtrStmt&>(s)));
    case StmtKind::kFieldPtr: {
      QD_ASSIGN_OR_RETURN(
          llvm::Value * ptr,
          EmitFieldPtr(static_cast<const ir::FieldPtrStmt&>(s)));
      return set(ptr);
    }
    case StmtKind::kGlobalLoad:
      return set(EmitGlobalLoad(s));
    case StmtKind::kGlobalStore:
      EmitGlobalStore(s);
      return absl::OkStatus();
    case StmtKind::kAlloca: {
      llvm::Type* type = ops_.RegisterType(s.type().element());
      llvm::AllocaInst* slot = EntryAlloca(type, "var");
      b_.CreateStore(llvm::Constant::getNullValue(type), slot);
      return set(slot);
    }
    case StmtKind::kLocalLoad:
      return set(b_.CreateLoad(ops_.RegisterType(s.type().element()),
                               Get(s.operand(0))));
    case StmtKind::kLocalStore:
      EmitLocalStore(s);
      return absl::OkStatus();
    case StmtKind::kUnaryOp: {
      const auto& unary = static_cast<const ir::UnaryOpStmt&>(s);
      if (values_.contains(&s))
        return absl::OkStatus();  // computed with its sin/cos partner
      if (const Stmt* partner = TrigPartner(unary)) {
        auto [sin, cos] = SinCos(Get(unary.input()));
        const bool is_sin = unary.op() == ir::UnaryOpKind::kSin;
        values_[partner] = is_sin ? cos : sin;
        ++sin_cos_pairs_;
        return set(is_sin ? sin : cos);
      }
      llvm::Value* v =
          ops_.Unary(unary.op(), Get(unary.input()),
                     unary.input()->type().element(), s.type().element());
      if (v == nullptr)
        return unsupported("this unary op");
      return set(v);
    }
    case StmtKind::kBinaryOp: {
      const auto& binary = static_cast<const ir::BinaryOpStmt&>(s);
      llvm::Value* v =
          ops_.Binary(binary.op(), Get(binary.lhs()), Get(binary.rhs()),
                      binary.lhs()->type().element());
      if (v == nullptr)
        return unsupported("this binary op");
      return set(v);
    }
    case StmtKind::kTernaryOp:
      return set(b_.CreateSelect(
          ops_.AsBool(Get(s.operand(0)), s.operand(0)->type().element()),
          Get(s.operand(1)), Get(s.operand(2))));
    case StmtKind::kAtomicOp: {
      QD_ASSIGN_OR_RETURN(llvm::Value * v,
                          EmitAtomic(static_cast<const ir::AtomicOpStmt&>(s)));
      return set(v);
    }
    case StmtKind::kRangeFor:
      return EmitRangeFor(static_cast<const ir::RangeForStmt&>(s));
    case StmtKind::kStructFor:
      return EmitStructFor(static_cast<const ir::StructForStmt&>(s));
    case StmtKind::kWhile:
      return EmitWhile(static_cast<const ir::WhileStmt&>(s));
    case StmtKind::kLoopIndex: {
      const auto& index = static_cast<const ir::LoopIndexStmt&>(s);
      llvm::Value* v = loop_indices_.at(index.loop())[index.axis()];
      return set(b_.CreateIntCast(v, ops_.RegisterType(s.type().element()),
                                  ir::IsSigned(s.type().element())));
    }
    case StmtKind::kBreak:
    case StmtKind::kContinue:
      EmitJump(s);
      return absl::OkStatus();
    case StmtKind::kIf:
      return EmitIf(static_cast<const ir::IfStmt&>(s));
    case StmtKind::kAssert:
      return absl::OkStatus();  // asserts run in debug mode, which is scalar
    case StmtKind::kAdStackAlloca:
      EmitAdStackAlloca(static_cast<const ir::AdStackAllocaStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kAdStackPush:
      EmitAdStackPush(static_cast<const ir::AdStackPushStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kAdStackPop:
      EmitAdStackPop(static_cast<const ir::AdStackPopStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kAdStackLoadTop:
    case StmtKind::kAdStackLoadTopAdj: {
      const StackState& st = stacks_.at(s.operand(0));
      const bool adjoint = s.kind() == StmtKind::kAdStackLoadTopAdj;
      return set(StackLoad(st, StackSlot(st, StackTop(st), adjoint)));
    }
    case StmtKind::kAdStackAccAdjoint: {
      const StackState& st = stacks_.at(s.operand(0));
      llvm::Value* slot = StackSlot(st, StackTop(st), true);
      StackStore(st, b_.CreateFAdd(StackLoad(st, slot), Get(s.operand(1))),
                 slot);
      return absl::OkStatus();
    }
    case StmtKind::kRandom:
      return set(EmitRandom(static_cast<const ir::RandomStmt&>(s)));
    default:
      return unsupported(
          absl::StrCat("statement kind ", static_cast<int>(s.kind())));
  }
}

}  // namespace

int RegistersPerValue(const ir::OffloadedTaskStmt& task) {
  int statements = 0;
  ir::WalkBlock(*task.body(), [&](const Stmt*) { ++statements; });
  return statements <= kWideGangStatements ? 4 : 2;
}

int LaneCount(const ir::OffloadedTaskStmt& task, int vector_bits) {
  bool wide = false;
  ir::WalkBlock(*task.body(), [&](const Stmt* s) {
    if (ir::BitWidth(s->type().element()) == 64)
      wide = true;
  });
  return RegistersPerValue(task) * vector_bits / (wide ? 64 : 32);
}

absl::StatusOr<int> EmitLaneTask(llvm::Module& module, const ir::Kernel& kernel,
                                 const ir::SNodeTree& snodes,
                                 const ir::OffloadedTaskStmt& task,
                                 int task_index, int lanes, int vector_bits,
                                 bool ad_stack_size_forced,
                                 const std::string& name,
                                 std::vector<AdStackSpec>* stacks) {
  LaneEmitter emitter(module, kernel, snodes, task, task_index, lanes,
                      ad_stack_size_forced, stacks);
  QD_RETURN_IF_ERROR(emitter.Emit(name, vector_bits));
  return emitter.sin_cos_pairs();
}

}  // namespace quadrants::codegen
