// Adstacks in SIMD lanes: lane-interleaved slots, one depth per stack or
// per lane, checked pushes.
#include "quadrants/adstack/stack_spec.h"
#include "quadrants/codegen/llvm/lane_emitter_internal.h"

namespace quadrants::codegen::lanes {

void LaneEmitter::EmitAdStackAlloca(const ir::AdStackAllocaStmt& s) {
  const PrimitiveType t = s.dtype();
  const bool adjoint = ir::IsFloat(t) && adjoint_stacks_.contains(&s);
  const int64_t elem = adstack::ElementBytes(t);
  AdStackSpec spec = adstack::Describe(s, adjoint ? 2 * elem : elem);
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
  stacks_[&s] = {id,
                 region,
                 count,
                 capacity,
                 per_lane,
                 adstack::NeedsBoundsCheck(s, checks_),
                 adjoint,
                 elem,
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
  scopes_.MarkAdStack(st.per_lane
                          ? b_.CreateMaskedScatter(value, slot, align, mask_)
                          : b_.CreateMaskedStore(value, slot, align, mask_));
}

llvm::Value* LaneEmitter::StackLoad(const StackState& st, llvm::Value* slot) {
  llvm::Type* type = ops_.Widen(Storage(st.dtype));
  const llvm::Align align(st.elem);
  llvm::Value* zeros = Zeros(Storage(st.dtype));
  llvm::CallInst* load =
      st.per_lane ? b_.CreateMaskedGather(type, slot, align, mask_, zeros)
                  : b_.CreateMaskedLoad(type, slot, align, mask_, zeros);
  scopes_.MarkAdStack(load);
  llvm::Value* v = load;
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

}  // namespace quadrants::codegen::lanes
