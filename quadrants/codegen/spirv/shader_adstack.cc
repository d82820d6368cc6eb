// Adstacks of a shader: each stack a slice of the task's float or int
// heap per invocation, its counter in a Function-scope array, and checked
// pushes that clamp and record overflows.
#include "quadrants/adstack/stack_spec.h"
#include "quadrants/codegen/spirv/shader_emitter_internal.h"

namespace quadrants::codegen::spirv::shader {

Id ShaderEmitter::AdWord(uint32_t offset) {
  return EntryWord(ad_words_, offset, [&] {
    return b_.EntryOp(
        spv::OpIAdd, U64(),
        {CtxWord(abi::kCtxAdStack), b_.ConstU64(ad_record_offset_ + offset)});
  });
}

Id ShaderEmitter::AdCounter(uint32_t id) {
  return b_.Op(
      spv::OpAccessChain, b_.PointerType(spv::StorageClassFunction, U32()),
      {ad_counters_,
       b_.Op(spv::OpIAdd, U32(), {ad_counter_base_, b_.ConstU32(id)})});
}

bool ShaderEmitter::HasStackAdjoint(const Stmt* stack) {
  if (!adjoint_stacks_computed_) {
    ir::WalkKernel(kernel_, [&](const Stmt* s) {
      if (ir::Isa<ir::AdStackLoadTopAdjStmt>(s) ||
          ir::Isa<ir::AdStackAccAdjointStmt>(s)) {
        adjoint_stacks_[s->operand(0)] = true;
      }
    });
    adjoint_stacks_computed_ = true;
  }
  return adjoint_stacks_.contains(stack);
}

void ShaderEmitter::EmitAdStackAlloca(const ir::AdStackAllocaStmt& s) {
  const Id u64 = U64(), u32 = U32();
  AdStack st;
  st.id = static_cast<uint32_t>(stacks_.size());
  st.dtype = s.dtype();
  const bool is_float = ir::IsFloat(st.dtype);
  const bool wide = ir::BitWidth(st.dtype) == 64;
  // Narrow values widen to 32 bits: heap elements are whole words.
  st.stored = is_float ? (wide ? PrimitiveType::kF64 : PrimitiveType::kF32)
                       : (wide ? PrimitiveType::kI64 : PrimitiveType::kI32);
  st.unit = wide ? 8 : 4;
  // Adjoint slots only where the kernel reads or accumulates adjoints:
  // otherwise pushes move half the bytes.
  st.adjoint = is_float && HasStackAdjoint(&s);
  st.checked = adstack::NeedsBoundsCheck(s, options_.adstack_checks());
  const uint32_t words = abi::kAdHeaderBytes + abi::kAdStackBytes * st.id;
  Id heap = AdWord(is_float ? abi::kAdFloatHeap : abi::kAdIntHeap);
  Id slices = ad_slices_ != 0 ? ad_slices_ : AdWord(abi::kAdInvocations);
  Id slice = ad_slice_ != 0 ? ad_slice_ : invocation_;
  Id offset = AdWord(words + abi::kAdStackOffset);
  st.capacity =
      b_.Op(spv::OpUConvert, u32, {AdWord(words + abi::kAdStackCapacity)});
  st.element_stride = b_.Op(spv::OpIMul, u64, {slices, b_.ConstU64(st.unit)});
  st.base = b_.Op(
      spv::OpIAdd, u64,
      {heap,
       b_.Op(spv::OpIAdd, u64,
             {b_.Op(spv::OpIMul, u64, {offset, slices}),
              b_.Op(spv::OpIMul, u64, {slice, b_.ConstU64(st.unit)})})});
  b_.OpVoid(spv::OpStore, {AdCounter(st.id), b_.ConstU32(0)});
  adstacks_.push_back(adstack::Describe(s, st.unit * (st.adjoint ? 2 : 1)));
  stacks_[&s] = st;
}

Id ShaderEmitter::EmitAdStackRow(const ir::AdStackRowStmt& s) {
  const Id u32 = U32(), u64 = U64();
  // A task without stacks has no record to claim rows from.
  if (ad_num_stacks_ == 0)
    return IntConvert(invocation_, PrimitiveType::kU64, PrimitiveType::kI32);
  Id rows = AdWord(abi::kAdRows);
  Id gated = b_.Op(spv::OpINotEqual, Bool(), {rows, b_.ConstU64(0)});
  Id passes = AsBool(Get(s.passes()), s.passes()->type().element());
  // A passing iteration claims a fresh row (an iteration that pushes
  // nothing keeps row 0); more claims than rows, impossible while the
  // gate's array is unchanged since the launch counted it, share the last.
  Id claimed = b_.LocalVariable(u64);
  b_.OpVoid(spv::OpStore, {claimed, b_.ConstU64(0)});
  If(b_.Op(spv::OpLogicalAnd, Bool(), {gated, passes}), [&] {
    Id counter = Pointer(
        u32, b_.Op(spv::OpIAdd, u64,
                   {CtxWord(abi::kCtxAdStack),
                    b_.ConstU64(ad_record_offset_ + abi::kAdRowsClaimed)}));
    Id row = Atomic(spv::OpAtomicIAdd, u32,
                    {counter, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0),
                     b_.ConstU32(1)});
    row = b_.Glsl(GLSLstd450UMin, u64,
                  {b_.Op(spv::OpUConvert, u64, {row}),
                   b_.Op(spv::OpISub, u64, {rows, b_.ConstU64(1)})});
    b_.OpVoid(spv::OpStore, {claimed, row});
  });
  ad_slice_ = b_.Op(spv::OpSelect, u64,
                    {gated, b_.Op(spv::OpLoad, u64, {claimed}), invocation_});
  ad_slices_ = b_.Op(spv::OpSelect, u64,
                     {gated, rows, AdWord(abi::kAdInvocations)});
  return IntConvert(ad_slice_, PrimitiveType::kU64, PrimitiveType::kI32);
}

Id ShaderEmitter::AdElement(const AdStack& st, Id slot, bool adjoint) {
  const Id u64 = U64();
  Id element = b_.Op(spv::OpUConvert, u64, {slot});
  if (st.adjoint) {
    element =
        b_.Op(spv::OpIAdd, u64,
              {b_.Op(spv::OpShiftLeftLogical, u64, {element, b_.ConstU64(1)}),
               b_.ConstU64(adjoint ? 1 : 0)});
  }
  return b_.Op(
      spv::OpIAdd, u64,
      {st.base, b_.Op(spv::OpIMul, u64, {element, st.element_stride})});
}

Id ShaderEmitter::AdTop(const AdStack& st) {
  const Id u32 = U32();
  Id count = b_.Op(spv::OpLoad, u32, {AdCounter(st.id)});
  if (!st.checked)
    return b_.Op(spv::OpISub, u32, {count, b_.ConstU32(1)});
  // min(count, capacity) - 1, never below slot 0: an overflowed or empty
  // stack reads a slot of its own slice.
  Id top = b_.Glsl(GLSLstd450UMin, u32, {count, st.capacity});
  return b_.Op(spv::OpISub, u32,
               {top, b_.Glsl(GLSLstd450UMin, u32, {top, b_.ConstU32(1)})});
}

void ShaderEmitter::EmitAdStackPush(const ir::AdStackPushStmt& s) {
  const AdStack& st = stacks_.at(s.stack());
  const Id u32 = U32();
  Id counter = AdCounter(st.id);
  Id count = b_.Op(spv::OpLoad, u32, {counter});
  // Checked pushes clamp to the last slot and record the overflow through
  // selects and one atomic maximum: no branch per push.
  Id slot = st.checked ? b_.Glsl(GLSLstd450UMin, u32,
                                 {count, b_.Op(spv::OpISub, u32,
                                               {st.capacity, b_.ConstU32(1)})})
                       : count;
  const Id type = RegType(st.stored);
  Store(AdElement(st, slot, false), Cast(Get(s.value()), st.dtype, st.stored),
        type, st.unit);
  if (st.adjoint)
    Store(AdElement(st, slot, true), Zero(st.stored), type, st.unit);
  Id next = b_.Op(spv::OpIAdd, u32, {count, b_.ConstU32(1)});
  b_.OpVoid(spv::OpStore, {counter, next});
  if (st.checked) {
    const uint32_t code =
        (static_cast<uint32_t>(task_index_) << 16) + st.id + 1;
    Id signal = b_.Op(spv::OpSelect, u32,
                      {b_.Op(spv::OpUGreaterThan, Bool(), {next, st.capacity}),
                       b_.ConstU32(code), b_.ConstU32(0)});
    Id word = Pointer(u32, AddrAdd(RuntimeAddr(), abi::kRtAdStackOverflow));
    Atomic(spv::OpAtomicUMax, u32,
           {word, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0), signal});
  }
}

void ShaderEmitter::EmitAdStackPop(const ir::AdStackPopStmt& s) {
  const AdStack& st = stacks_.at(s.stack());
  const Id u32 = U32();
  Id counter = AdCounter(st.id);
  Id count = b_.Op(spv::OpLoad, u32, {counter});
  Id decrement = st.checked
                     ? b_.Glsl(GLSLstd450UMin, u32, {count, b_.ConstU32(1)})
                     : b_.ConstU32(1);
  b_.OpVoid(spv::OpStore,
            {counter, b_.Op(spv::OpISub, u32, {count, decrement})});
}

}  // namespace quadrants::codegen::spirv::shader
