// Atomics in SIMD lanes: combined per vector for one address, summed over
// a chunk, vector read-modify-writes of elements each iteration owns, or
// per active lane.
#include "quadrants/codegen/llvm/lane_emitter_internal.h"

namespace quadrants::codegen::lanes {

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
  llvm::Value* value = Get(s.value());
  llvm::Value* expected = s.expected() ? Get(s.expected()) : nullptr;
  llvm::Value* ptrs = Get(s.ptr());
  if (t == PrimitiveType::kU1) {
    value = b_.CreateZExt(value, ops_.Widen(b_.getInt8Ty()));
    if (expected != nullptr)
      expected = b_.CreateZExt(expected, ops_.Widen(b_.getInt8Ty()));
  }
  if (!IsCombinableAtomic(s.op()))
    return EmitPerLaneAtomic(s, ptrs, value, expected);
  using Op = llvm::AtomicRMWInst::BinOp;
  QD_ASSIGN_OR_RETURN(const Op op, AtomicBinOp(s, kernel_.name()));
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
  return EmitPerLaneAtomic(s, ptrs, value, nullptr);
}

absl::StatusOr<llvm::Value*> LaneEmitter::EmitPerLaneAtomic(
    const ir::AtomicOpStmt& s, llvm::Value* ptrs, llvm::Value* value,
    llvm::Value* expected) {
  // One atomic per active lane, in lane order.
  llvm::Type* scalar = value->getType()->getScalarType();
  llvm::AllocaInst* result =
      EntryAlloca(llvm::ArrayType::get(scalar, lanes_), "atomic.old");
  b_.CreateStore(llvm::Constant::getNullValue(value->getType()), result);
  for (int l = 0; l < lanes_; ++l) {
    auto* on = llvm::BasicBlock::Create(context_, "atomic.lane", function_);
    auto* next = llvm::BasicBlock::Create(context_, "atomic.next", function_);
    b_.CreateCondBr(b_.CreateExtractElement(mask_, uint64_t(l)), on, next);
    b_.SetInsertPoint(on);
    QD_ASSIGN_OR_RETURN(
        llvm::Value * old,
        EmitScalarAtomic(
            b_, s, kernel_.name(), b_.CreateExtractElement(ptrs, uint64_t(l)),
            b_.CreateExtractElement(value, uint64_t(l)),
            expected ? b_.CreateExtractElement(expected, uint64_t(l))
                     : nullptr));
    b_.CreateStore(
        old, b_.CreateConstGEP2_32(result->getAllocatedType(), result, 0, l));
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
  llvm::Value* old = b_.CreateLoad(value->getType(), result);
  if (s.type().element() == PrimitiveType::kU1)
    old = b_.CreateICmpNE(old, Splat(b_.getInt8(0)));
  return old;
}

}  // namespace quadrants::codegen::lanes
