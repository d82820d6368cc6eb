#include "quadrants/codegen/llvm/function_emitter.h"

#include <algorithm>
#include <cmath>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "llvm/IR/Intrinsics.h"
#include "quadrants/adstack/stack_spec.h"
#include "quadrants/codegen/llvm/adstack_slots.h"
#include "quadrants/codegen/llvm/lane_forms.h"
#include "quadrants/codegen/llvm/warp_atomics.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/uses.h"
#include "quadrants/ir/walk.h"

namespace quadrants::codegen {

llvm::Type* FunctionEmitter::StorageType(PrimitiveType t) {
  return t == PrimitiveType::kU1 ? b_.getInt8Ty() : RegisterType(t);
}

llvm::Value* FunctionEmitter::Call(const std::string& name, llvm::Type* result,
                                   std::vector<llvm::Value*> args) {
  return CallRuntime(b_, name, result, std::move(args));
}

llvm::AllocaInst* FunctionEmitter::EntryAlloca(llvm::Type* type,
                                               const char* name) {
  llvm::IRBuilder<> entry(entry_, entry_->begin());
  return entry.CreateAlloca(type, nullptr, name);
}

llvm::Function* FunctionEmitter::BeginFunction(
    const std::string& name, std::vector<llvm::Type*> params) {
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  function_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                     name, module_);
  ctx_ = function_->getArg(0);
  entry_ = llvm::BasicBlock::Create(context_, "entry", function_);
  b_.SetInsertPoint(entry_);
  values_.clear();
  loop_indices_.clear();
  loops_.clear();
  return function_;
}

void FunctionEmitter::StartDeadBlock() {
  b_.SetInsertPoint(
      llvm::BasicBlock::Create(context_, "unreachable", function_));
}

int FunctionEmitter::AddSite(std::string description,
                             const SourceLocation& loc) {
  sites_.push_back(ErrorSite{std::move(description), loc});
  return static_cast<int>(sites_.size()) - 1;
}

absl::Status FunctionEmitter::Unsupported(const Stmt& s,
                                          absl::string_view what) {
  return MakeError(ErrorKind::kCompilation, s.loc(),
                   absl::StrCat("in kernel '", kernel_.name(), "': ", what,
                                " is not supported by the LLVM backends yet"));
}

absl::Status FunctionEmitter::EmitTask(const ir::OffloadedTaskStmt& task,
                                       const std::string& name) {
  BeginFunction(
      name, {b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty(), b_.getInt32Ty()});
  shared_bytes_ = 0;
  llvm::Value* begin = function_->getArg(1);
  llvm::Value* end = function_->getArg(2);
  bool draws = false;
  ir::WalkBlock(*task.body(), [&](const Stmt* s) {
    draws = draws || ir::Isa<ir::RandomStmt>(s) ||
            (functions_draw_ && ir::Isa<ir::FuncCallStmt>(s));
  });
  random_state_ = draws ? EntryAlloca(b_.getInt64Ty(), "random") : nullptr;
  absl::Status status;
  switch (task.task_kind()) {
    case ir::TaskKind::kSerial:
      loops_.push_back({nullptr, nullptr});
      SeedRandom(b_.getInt64(0));
      status = EmitBlock(*task.body());
      break;
    case ir::TaskKind::kRangeFor: {
      const PrimitiveType index_type = task.begin()->type().element();
      status = EmitCountedLoop(begin, end, [&](llvm::Value* i) {
        loop_indices_[&task] = {b_.CreateIntCast(i, RegisterType(index_type),
                                                 ir::IsSigned(index_type))};
        SeedRandom(i);
        return EmitBlock(*task.body());
      });
      break;
    }
    case ir::TaskKind::kStructFor:
      status = EmitCountedLoop(begin, end, [&](llvm::Value* i) {
        loop_indices_[&task] = DecomposeCell(task.snode_id(), i);
        SeedRandom(i);
        return EmitBlock(*task.body());
      });
      break;
  }
  random_state_ = nullptr;
  if (!status.ok())
    return status;
  b_.CreateRetVoid();
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitRealFunctions() {
  const auto& functions = kernel_.functions();
  real_functions_.clear();
  functions_draw_ = false;
  for (const auto& function : functions) {
    ir::WalkBlock(*function->body(), [&](const Stmt* s) {
      functions_draw_ = functions_draw_ || ir::Isa<ir::RandomStmt>(s);
    });
  }
  for (size_t f = 0; f < functions.size(); ++f) {
    // The caller's random state comes second: a function draws from the
    // stream of the iteration that calls it.
    std::vector<llvm::Type*> params = {b_.getPtrTy(), b_.getPtrTy()};
    for (const ir::FunctionParam& p : functions[f]->params()) {
      params.push_back(p.type.is_pointer() ? b_.getPtrTy()
                                           : RegisterType(p.type.element()));
    }
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    // Internal: the optimizer may inline a non-recursive one into its
    // callers, and two kernels' functions never clash.
    real_functions_.push_back(llvm::Function::Create(
        type, llvm::Function::InternalLinkage,
        absl::StrCat("qd_fn", f, "_", functions[f]->name()), module_));
  }
  in_real_function_ = true;
  absl::Cleanup done = [this] { in_real_function_ = false; };
  for (size_t f = 0; f < functions.size(); ++f) {
    const ir::Function& fn = *functions[f];
    function_ = real_functions_[f];
    ctx_ = function_->getArg(0);
    entry_ = llvm::BasicBlock::Create(context_, "entry", function_);
    b_.SetInsertPoint(entry_);
    values_.clear();
    loop_indices_.clear();
    loops_.clear();
    loops_.push_back({nullptr, nullptr});
    random_state_ = functions_draw_ ? function_->getArg(1) : nullptr;
    QD_RETURN_IF_ERROR(EmitBlock(*fn.body()));
    b_.CreateRetVoid();
  }
  random_state_ = nullptr;
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitBounds(const ir::OffloadedTaskStmt& task,
                                         const std::string& name) {
  BeginFunction(name, {b_.getPtrTy(), b_.getPtrTy()});
  if (absl::Status s = EmitBlock(*task.prologue()); !s.ok())
    return s;
  llvm::Value* out = function_->getArg(1);
  const PrimitiveType t = task.begin()->type().element();
  b_.CreateStore(ToI64(Get(task.begin()), t), out);
  b_.CreateStore(ToI64(Get(task.end()), t),
                 b_.CreateConstGEP1_64(b_.getInt64Ty(), out, 1));
  b_.CreateRetVoid();
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitCountedLoop(
    llvm::Value* begin, llvm::Value* end,
    const std::function<absl::Status(llvm::Value*)>& body) {
  llvm::AllocaInst* counter = EntryAlloca(b_.getInt64Ty(), "i");
  b_.CreateStore(begin, counter);
  auto* header = llvm::BasicBlock::Create(context_, "loop.header", function_);
  auto* body_bb = llvm::BasicBlock::Create(context_, "loop.body", function_);
  auto* latch = llvm::BasicBlock::Create(context_, "loop.latch", function_);
  auto* exit = llvm::BasicBlock::Create(context_, "loop.exit", function_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::Value* i = b_.CreateLoad(b_.getInt64Ty(), counter);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  loops_.push_back({latch, exit});
  absl::Status status = body(i);
  loops_.pop_back();
  if (!status.ok())
    return status;
  b_.CreateBr(latch);
  b_.SetInsertPoint(latch);
  llvm::Value* current = b_.CreateLoad(b_.getInt64Ty(), counter);
  b_.CreateStore(b_.CreateAdd(current, b_.getInt64(1)), counter);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  return absl::OkStatus();
}

std::vector<llvm::Value*> FunctionEmitter::DecomposeCell(int snode,
                                                         llvm::Value* linear) {
  return ops_.DecomposeCell(snodes_.CellAxes(snode), linear);
}

void FunctionEmitter::EmitAdStackAlloca(const ir::AdStackAllocaStmt& s) {
  const PrimitiveType t = s.dtype();
  const int64_t elem = adstack::ElementBytes(t);
  // A float slot holds an adjoint after its primal only when the kernel
  // reads or accumulates stack adjoints; otherwise pushes move half the
  // bytes.
  const bool adjoint = ir::IsFloat(t) && HasStackAdjoint(&s);
  AdStackSpec spec = adstack::Describe(s, adjoint ? 2 * elem : elem);
  const int id = static_cast<int>(task_stacks_->size());
  task_stacks_->push_back(spec);
  llvm::Value* heap = Call("qd_adstack_heap", b_.getPtrTy(), {ctx_});
  llvm::Value* offset =
      Call("qd_adstack_offset", b_.getInt64Ty(), {ctx_, b_.getInt32(id)});
  llvm::Value* capacity =
      Call("qd_adstack_max_size", b_.getInt64Ty(), {ctx_, b_.getInt32(id)});
  llvm::Value* thread = b_.CreateSExt(
      adstack_row_ != nullptr ? adstack_row_ : function_->getArg(3),
      b_.getInt64Ty());
  llvm::Value* base = nullptr;
  llvm::Value* word_stride = nullptr;
  // Interleaving unit: one element, so a warp pushing in lockstep writes
  // whole consecutive elements (4-byte slots in 8-byte words would leave
  // every other word of the rows it touches unwritten).
  const int64_t unit = elem == 4 ? 4 : 8;
  if (options_.interleave_adstacks) {
    // Word w of every thread's slice lies together, thread t at u * t, so
    // threads pushing in lockstep touch consecutive words (coalesced):
    // byte b of the stack is at heap + offset * T + u * t + (b / u) * uT
    // + b % u, with T the threads of the launch and u the unit.
    llvm::Value* threads = Call("qd_adstack_threads", b_.getInt64Ty(), {ctx_});
    word_stride = b_.CreateMul(threads, b_.getInt64(unit));
    base = b_.CreateGEP(b_.getInt8Ty(), heap,
                        b_.CreateAdd(b_.CreateMul(offset, threads),
                                     b_.CreateMul(thread, b_.getInt64(unit))));
  } else {
    // This thread's slice: heap + thread_id * stride + offset[id].
    llvm::Value* stride = Call("qd_adstack_stride", b_.getInt64Ty(), {ctx_});
    base = b_.CreateGEP(b_.getInt8Ty(), heap,
                        b_.CreateAdd(b_.CreateMul(thread, stride), offset));
  }
  // The count lives in a local, not in the heap: it stays in a register
  // instead of a memory round trip at every push and pop.
  llvm::AllocaInst* count = EntryAlloca(b_.getInt64Ty(), "adstack.count");
  b_.CreateStore(b_.getInt64(0), count);
  stacks_[&s] = {id,
                 base,
                 count,
                 capacity,
                 word_stride,
                 unit,
                 spec.slot_bytes,
                 elem,
                 adstack::NeedsBoundsCheck(s, options_.adstack_checks()),
                 adjoint};
  values_[&s] = base;
}

llvm::Value* FunctionEmitter::StackTopIndex(const Stmt* stack) {
  const StackState& st = stacks_.at(stack);
  llvm::Value* top =
      b_.CreateSub(b_.CreateLoad(b_.getInt64Ty(), st.count), b_.getInt64(1));
  // An empty stack reads slot 0 instead of underflowing (checked stacks).
  if (st.checked) {
    top = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, top, b_.getInt64(0));
  }
  return top;
}

llvm::Value* FunctionEmitter::StackSlot(const Stmt* stack, llvm::Value* index,
                                        bool adjoint) {
  const StackState& st = stacks_.at(stack);
  // Slot indices are never negative (pushes and pops balance), so no step
  // wraps: LLVM then folds the word index and strength-reduces the address.
  llvm::Value* offset = b_.CreateAdd(
      b_.getInt64(8 + (adjoint ? st.elem_bytes : 0)),
      b_.CreateMul(index, b_.getInt64(st.slot_bytes), "", true, true), "",
      true, true);
  if (st.word_stride != nullptr) {
    offset = b_.CreateAdd(
        b_.CreateMul(b_.CreateLShr(offset, b_.getInt64(st.unit == 4 ? 2 : 3)),
                     st.word_stride, "", true, true),
        b_.CreateAnd(offset, b_.getInt64(st.unit - 1)), "", true, true);
  }
  return b_.CreateGEP(b_.getInt8Ty(), st.base, offset);
}

void FunctionEmitter::EmitAdStackPush(const ir::AdStackPushStmt& s) {
  const StackState& st = stacks_.at(s.stack());
  const PrimitiveType t = s.value()->type().element();
  llvm::Value* count = b_.CreateLoad(b_.getInt64Ty(), st.count);
  PushTarget target = {count, b_.CreateAdd(count, b_.getInt64(1))};
  if (st.checked) {
    llvm::Value* fits = b_.CreateICmpSLT(count, st.capacity);
    target = EmitCheckedPushTarget(b_, count, st.capacity, fits,
                                   b_.CreateNot(fits), [&] {
                                     Call("qd_adstack_overflow", b_.getVoidTy(),
                                          {ctx_, b_.getInt32(st.id)});
                                   });
  }
  llvm::Value* value = Get(s.value());
  if (t == PrimitiveType::kU1)
    value = b_.CreateZExt(value, b_.getInt8Ty());
  scopes_.MarkAdStack(
      b_.CreateStore(value, StackSlot(s.stack(), target.index, false)));
  if (st.adjoint) {
    scopes_.MarkAdStack(
        b_.CreateStore(llvm::ConstantFP::get(RegisterType(t), 0.0),
                       StackSlot(s.stack(), target.index, true)));
  }
  b_.CreateStore(target.next, st.count);
}

void FunctionEmitter::EmitAdStackPop(const ir::AdStackPopStmt& s) {
  const StackState& st = stacks_.at(s.stack());
  llvm::Value* next =
      b_.CreateSub(b_.CreateLoad(b_.getInt64Ty(), st.count), b_.getInt64(1));
  if (st.checked) {
    next =
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, next, b_.getInt64(0));
  }
  b_.CreateStore(next, st.count);
}

absl::Status FunctionEmitter::EmitBlock(const ir::Block& block) {
  for (const auto& stmt : block)
    QD_RETURN_IF_ERROR(Visit(*stmt));
  return absl::OkStatus();
}

llvm::Value* FunctionEmitter::EmitArgLoad(const ir::ArgLoadStmt& s) {
  llvm::Value* slot =
      Call("qd_arg", b_.getInt64Ty(), {ctx_, b_.getInt32(s.arg())});
  return ops_.DecodeArgument(slot, s.type().element());
}

void FunctionEmitter::CheckIndex(llvm::Value*& valid, int site, int axis,
                                 llvm::Value* index, llvm::Value* extent) {
  if (valid == nullptr)
    return;
  llvm::Value* ok =
      Call("qd_check_index", b_.getInt32Ty(),
           {ctx_, b_.getInt32(site), b_.getInt32(axis), index, extent});
  valid = b_.CreateAnd(valid, b_.CreateICmpNE(ok, b_.getInt32(0)));
}

llvm::Value* FunctionEmitter::GuardedPointer(llvm::Value* valid,
                                             llvm::Value* ptr) {
  if (valid == nullptr)
    return ptr;
  return b_.CreateSelect(valid, ptr, Call("qd_scratch", b_.getPtrTy(), {ctx_}));
}

llvm::Value* FunctionEmitter::EmitNdarrayPtr(const ir::NdarrayPtrStmt& s) {
  const ir::KernelParam& param = kernel_.params()[s.arg()];
  const int site = options_.check_out_of_bound
                       ? AddSite(NdarraySiteName(kernel_, s.arg()), s.loc())
                       : -1;
  llvm::Value* data =
      Call("qd_ndarray_data", b_.getPtrTy(), {ctx_, b_.getInt32(s.arg())});
  llvm::Value* linear = b_.getInt64(0);
  llvm::Value* valid = options_.check_out_of_bound ? b_.getTrue() : nullptr;
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    llvm::Value* extent = Call("qd_ndarray_shape", b_.getInt64Ty(),
                               {ctx_, b_.getInt32(s.arg()), b_.getInt32(axis)});
    llvm::Value* index =
        ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    CheckIndex(valid, site, static_cast<int>(axis), index, extent);
    linear = b_.CreateAdd(b_.CreateMul(linear, extent), index);
  }
  return GuardedPointer(valid,
                        b_.CreateGEP(StorageType(param.dtype), data, linear));
}

absl::StatusOr<llvm::Value*> FunctionEmitter::EmitFieldPtr(
    const ir::FieldPtrStmt& s) {
  QD_ASSIGN_OR_RETURN(const ir::PlaceLayout layout,
                      snodes_.Layout(s.snode_id()));
  const bool checked = options_.check_out_of_bound;
  const int site =
      checked ? AddSite(FieldSiteName(snodes_, s.snode_id()), s.loc()) : -1;
  llvm::Value* offset = b_.getInt64(layout.offset);
  if (s.block() != nullptr) {
    // Inside the block of the nearest pointer or dynamic level.
    llvm::Value* block = b_.CreateSExt(Get(s.block()), b_.getInt64Ty());
    offset = b_.CreateAdd(
        offset, b_.CreateAdd(b_.getInt64(layout.pool_offset),
                             b_.CreateMul(block,
                                          b_.getInt64(layout.block_bytes))));
  } else if (layout.pool_node >= 0) {
    return MakeError(ErrorKind::kCompilation, s.loc(),
                     absl::StrCat("in kernel '", kernel_.name(),
                                  "': internal: field pointer of '",
                                  snodes_.node(s.snode_id()).name,
                                  "' reached code generation without its "
                                  "pool block"));
  }
  llvm::Value* valid = checked ? b_.getTrue() : nullptr;
  for (size_t axis = 0; axis < s.num_indices(); ++axis) {
    llvm::Value* index =
        ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    CheckIndex(valid, site, static_cast<int>(axis), index,
               b_.getInt64(layout.shape[axis]));
    for (const ir::AxisDigit& d : layout.digits[axis]) {
      llvm::Value* digit = index;
      if (d.divisor > 1)
        digit = b_.CreateSDiv(digit, b_.getInt64(d.divisor));
      if (d.modulus > 0)
        digit = b_.CreateSRem(digit, b_.getInt64(d.modulus));
      offset = b_.CreateAdd(offset,
                            b_.CreateMul(digit, b_.getInt64(d.stride)));
    }
  }
  llvm::Value* root = Call("qd_root", b_.getPtrTy(), {ctx_});
  return GuardedPointer(valid, b_.CreateGEP(b_.getInt8Ty(), root, offset));
}

absl::StatusOr<llvm::Value*> FunctionEmitter::EmitSNodeOp(
    const ir::SNodeOpStmt& s) {
  const ir::SNode& node = snodes_.node(s.snode_id());
  llvm::Value* root = Call("qd_root", b_.getPtrTy(), {ctx_});
  llvm::Value* state =
      b_.CreateGEP(b_.getInt8Ty(), root, b_.getInt64(node.pool_state_offset));
  llvm::Value* pool =
      b_.CreateGEP(b_.getInt8Ty(), root, b_.getInt64(node.pool_offset));
  llvm::Value* entry = Get(s.entry());
  if (s.op() == ir::SNodeOpKind::kRelease) {
    Call("qd_pool_release", b_.getVoidTy(),
         {entry, state, pool, b_.getInt64(node.block_bytes)});
    return nullptr;
  }
  std::string what = PoolSiteName(snodes_, s.snode_id());
  if (!s.label().empty())
    what = absl::StrCat(what, ", for a write to '", s.label(), "'");
  const int site = AddSite(what, s.loc());
  return Call("qd_pool_acquire", b_.getInt32Ty(),
              {ctx_, entry, state, pool, b_.getInt64(node.pool_blocks),
               b_.getInt64(node.block_bytes), b_.getInt32(site)});
}

llvm::Value* FunctionEmitter::MathCall(const char* name,
                                       std::vector<llvm::Value*> args,
                                       PrimitiveType t) {
  const bool f64 = t == PrimitiveType::kF64;
  return Call(absl::StrCat("qd_", name, f64 ? "_f64" : "_f32"),
              f64 ? b_.getDoubleTy() : b_.getFloatTy(), std::move(args));
}

llvm::Value* FunctionEmitter::IntRuntimeCall(const char* name, llvm::Value* a,
                                             llvm::Value* b, PrimitiveType t) {
  // Narrow integers run in 32 bits with their signedness, then truncate.
  const bool wide = ir::BitWidth(t) == 64;
  const bool is_signed = ir::IsSigned(t);
  llvm::Type* work = wide ? b_.getInt64Ty() : b_.getInt32Ty();
  llvm::Value* x = b_.CreateIntCast(a, work, is_signed);
  llvm::Value* y = b_.CreateIntCast(b, work, is_signed);
  const char* suffix =
      wide ? (is_signed ? "_i64" : "_u64") : (is_signed ? "_i32" : "_u32");
  llvm::Value* r = Call(absl::StrCat("qd_", name, suffix), work, {x, y});
  return b_.CreateIntCast(r, RegisterType(t), is_signed);
}

absl::StatusOr<llvm::Value*> FunctionEmitter::EmitUnary(
    const ir::UnaryOpStmt& s) {
  llvm::Value* v = ops_.Unary(s.op(), Get(s.input()),
                              s.input()->type().element(), s.type().element());
  if (v == nullptr)
    return Unsupported(s, "this unary op");
  return v;
}

absl::StatusOr<llvm::Value*> FunctionEmitter::EmitBinary(
    const ir::BinaryOpStmt& s) {
  llvm::Value* v = ops_.Binary(s.op(), Get(s.lhs()), Get(s.rhs()),
                               s.lhs()->type().element());
  if (v == nullptr)
    return Unsupported(s, "this binary op");
  return v;
}

absl::StatusOr<llvm::Value*> FunctionEmitter::EmitAtomic(
    const ir::AtomicOpStmt& s) {
  const PrimitiveType t = s.type().element();
  const bool f = ir::IsFloat(t);
  using Op = llvm::AtomicRMWInst::BinOp;
  llvm::Value* value = Get(s.value());
  llvm::Value* expected = s.expected() ? Get(s.expected()) : nullptr;
  if (t == PrimitiveType::kU1) {
    value = b_.CreateZExt(value, b_.getInt8Ty());
    if (expected != nullptr)
      expected = b_.CreateZExt(expected, b_.getInt8Ty());
  }
  if (!IsCombinableAtomic(s.op())) {
    QD_ASSIGN_OR_RETURN(
        llvm::Value * old,
        EmitScalarAtomic(b_, s, kernel_.name(), Get(s.ptr()), value, expected));
    return t == PrimitiveType::kU1 ? b_.CreateICmpNE(old, b_.getInt8(0)) : old;
  }
  QD_ASSIGN_OR_RETURN(const Op op, AtomicBinOp(s, kernel_.name()));
  if (options_.warp_aggregate_atomics && f &&
      (op == Op::FAdd || op == Op::FSub) && t != PrimitiveType::kF16 &&
      ir::IsLaunchUniformPtr(*s.ptr()) && !IsUsed(&s)) {
    EmitWarpAggregatedAdd(b_, Get(s.ptr()),
                          op == Op::FSub ? b_.CreateFNeg(value) : value);
    return llvm::UndefValue::get(RegisterType(t));  // nobody reads it
  }
  llvm::Value* old =
      b_.CreateAtomicRMW(op, Get(s.ptr()), value, llvm::MaybeAlign(),
                         llvm::AtomicOrdering::Monotonic);
  return t == PrimitiveType::kU1 ? b_.CreateICmpNE(old, b_.getInt8(0)) : old;
}

bool FunctionEmitter::HasStackAdjoint(const Stmt* s) {
  if (!adjoint_stacks_computed_) {
    adjoint_stacks_ = StacksWithAdjoints(kernel_);
    adjoint_stacks_computed_ = true;
  }
  return adjoint_stacks_.contains(s);
}

bool FunctionEmitter::IsUsed(const Stmt* s) {
  if (!used_computed_) {
    used_ = ir::UsedValues(kernel_);
    used_computed_ = true;
  }
  return used_.contains(s);
}

absl::Status FunctionEmitter::EmitRangeFor(const ir::RangeForStmt& s) {
  const PrimitiveType t = s.begin()->type().element();
  return EmitCountedLoop(
      ToI64(Get(s.begin()), t), ToI64(Get(s.end()), t), [&](llvm::Value* i) {
        loop_indices_[&s] = {
            b_.CreateIntCast(i, RegisterType(t), ir::IsSigned(t))};
        return EmitBlock(*s.body());
      });
}

absl::Status FunctionEmitter::EmitStructFor(const ir::StructForStmt& s) {
  int64_t cells = 1;
  for (const auto& axis : snodes_.CellAxes(s.snode_id()))
    cells *= axis.second;
  return EmitCountedLoop(b_.getInt64(0), b_.getInt64(cells),
                         [&](llvm::Value* i) {
                           loop_indices_[&s] = DecomposeCell(s.snode_id(), i);
                           return EmitBlock(*s.body());
                         });
}

absl::Status FunctionEmitter::EmitWhile(const ir::WhileStmt& s) {
  auto* body = llvm::BasicBlock::Create(context_, "while.body", function_);
  auto* exit = llvm::BasicBlock::Create(context_, "while.exit", function_);
  b_.CreateBr(body);
  b_.SetInsertPoint(body);
  loops_.push_back({body, exit});
  absl::Status status = EmitBlock(*s.body());
  loops_.pop_back();
  if (!status.ok())
    return status;
  b_.CreateBr(body);
  b_.SetInsertPoint(exit);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitIf(const ir::IfStmt& s) {
  auto* then_bb = llvm::BasicBlock::Create(context_, "if.then", function_);
  auto* else_bb = llvm::BasicBlock::Create(context_, "if.else", function_);
  auto* merge = llvm::BasicBlock::Create(context_, "if.end", function_);
  b_.CreateCondBr(AsBool(Get(s.cond()), s.cond()->type().element()), then_bb,
                  else_bb);
  b_.SetInsertPoint(then_bb);
  if (absl::Status st = EmitBlock(*s.true_block()); !st.ok())
    return st;
  b_.CreateBr(merge);
  b_.SetInsertPoint(else_bb);
  if (absl::Status st = EmitBlock(*s.false_block()); !st.ok())
    return st;
  b_.CreateBr(merge);
  b_.SetInsertPoint(merge);
  return absl::OkStatus();
}

void FunctionEmitter::EmitAssert(const ir::AssertStmt& s) {
  if (!options_.debug)
    return;
  int site = AddSite(s.message(), s.loc());
  llvm::Value* values[3] = {b_.getInt64(0), b_.getInt64(0), b_.getInt64(0)};
  for (size_t k = 1; k < s.num_operands() && k <= 3; ++k) {
    const PrimitiveType t = s.operand(k)->type().element();
    sites_[site].value_types.push_back(t);
    llvm::Value* v = Get(s.operand(k));
    // Floats travel as f64 bits; the host formats them by the site's types.
    values[k - 1] =
        ir::IsFloat(t)
            ? b_.CreateBitCast(Cast(v, t, PrimitiveType::kF64), b_.getInt64Ty())
            : ToI64(v, t);
  }
  llvm::Value* cond = b_.CreateZExt(
      AsBool(Get(s.cond()), s.cond()->type().element()), b_.getInt32Ty());
  Call("qd_assert", b_.getVoidTy(),
       {ctx_, cond, b_.getInt32(site), values[0], values[1], values[2]});
}

llvm::Value* FunctionEmitter::AsBits(const Stmt* value) {
  const PrimitiveType t = value->type().element();
  llvm::Value* v = Get(value);
  return ir::IsFloat(t) ? b_.CreateBitCast(Cast(v, t, PrimitiveType::kF64),
                                           b_.getInt64Ty())
                        : ToI64(v, t);
}

void FunctionEmitter::EmitPrint(const ir::DebugPrintStmt& s) {
  ir::PrintSite site{s.pieces(), s.specs(), {}, s.loc()};
  const size_t count = s.num_operands();
  llvm::Type* slots =
      llvm::ArrayType::get(b_.getInt64Ty(), std::max<size_t>(count, 1));
  llvm::AllocaInst* values = EntryAlloca(slots, "print");
  for (size_t k = 0; k < count; ++k) {
    site.types.push_back(s.operand(k)->type().element());
    b_.CreateStore(AsBits(s.operand(k)),
                   b_.CreateConstGEP2_64(slots, values, 0, k));
  }
  const int id = static_cast<int>(print_sites_.size());
  print_sites_.push_back(std::move(site));
  Call("qd_print", b_.getVoidTy(),
       {ctx_, b_.getInt32(id), b_.getInt32(static_cast<int>(count)), values});
}

void FunctionEmitter::SeedRandom(llvm::Value* iteration) {
  if (random_state_ == nullptr)
    return;
  b_.CreateStore(Call("qd_random_seed", b_.getInt64Ty(),
                      {ctx_, b_.getInt32(task_index_), iteration}),
                 random_state_);
}

absl::StatusOr<llvm::Value*> FunctionEmitter::EmitRandom(
    const ir::RandomStmt& s) {
  if (random_state_ == nullptr)
    return Unsupported(s, "qd.random() outside a task body");
  llvm::Value* bits = Call("qd_random_next", b_.getInt64Ty(), {random_state_});
  return ops_.FromRandomBits(bits, s.type().element());
}

}  // namespace quadrants::codegen
