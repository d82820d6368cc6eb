// Atomics of a shader: native instructions (called through small
// functions for SPIRV-Cross), compare-exchange loops on the word holding
// the value, 64-bit integer ops as two 32-bit atomics, and spin-locked
// updates where the device has no 64-bit atomics.
#include "quadrants/codegen/spirv/shader_emitter_internal.h"
#include "quadrants/ir/uses.h"

namespace quadrants::codegen::spirv::shader {

Id ShaderEmitter::Combine(ir::AtomicOpKind op, Id old, Id value,
                          PrimitiveType t) {
  const Id type = RegType(t);
  const bool f = ir::IsFloat(t);
  switch (op) {
    case ir::AtomicOpKind::kAdd:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalNotEqual, Bool(), {old, value});
      return b_.Op(f ? spv::OpFAdd : spv::OpIAdd, type, {old, value});
    case ir::AtomicOpKind::kSub:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalNotEqual, Bool(), {old, value});
      return b_.Op(f ? spv::OpFSub : spv::OpISub, type, {old, value});
    case ir::AtomicOpKind::kMin:
      return MinMax(true, old, value, t);
    case ir::AtomicOpKind::kMax:
      return MinMax(false, old, value, t);
    case ir::AtomicOpKind::kBitAnd:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalAnd, Bool(), {old, value});
      return b_.Op(spv::OpBitwiseAnd, type, {old, value});
    case ir::AtomicOpKind::kBitOr:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalOr, Bool(), {old, value});
      return b_.Op(spv::OpBitwiseOr, type, {old, value});
    case ir::AtomicOpKind::kBitXor:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalNotEqual, Bool(), {old, value});
      return b_.Op(spv::OpBitwiseXor, type, {old, value});
    case ir::AtomicOpKind::kMul:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalAnd, Bool(), {old, value});
      return b_.Op(f ? spv::OpFMul : spv::OpIMul, type, {old, value});
    case ir::AtomicOpKind::kExchange:
      return value;
    case ir::AtomicOpKind::kCas:
      break;  // needs the expected value: EmitAtomic's update
  }
  return old;
}

spv::Op ShaderEmitter::NativeIntAtomic(const ir::AtomicOpStmt& s) {
  const bool sgn = ir::IsSigned(s.type().element());
  switch (s.op()) {
    case ir::AtomicOpKind::kAdd:
      return spv::OpAtomicIAdd;
    case ir::AtomicOpKind::kSub:
      return spv::OpAtomicISub;
    case ir::AtomicOpKind::kMin:
      return sgn ? spv::OpAtomicSMin : spv::OpAtomicUMin;
    case ir::AtomicOpKind::kMax:
      return sgn ? spv::OpAtomicSMax : spv::OpAtomicUMax;
    case ir::AtomicOpKind::kBitAnd:
      return spv::OpAtomicAnd;
    case ir::AtomicOpKind::kBitOr:
      return spv::OpAtomicOr;
    case ir::AtomicOpKind::kBitXor:
      return spv::OpAtomicXor;
    case ir::AtomicOpKind::kExchange:
      return spv::OpAtomicExchange;
    case ir::AtomicOpKind::kCas:
      return spv::OpAtomicCompareExchange;
    case ir::AtomicOpKind::kMul:
      break;
  }
  return spv::OpNop;
}

Id ShaderEmitter::CasLoop(Id addr, PrimitiveType t,
                          const std::function<Id(Id)>& update) {
  // The word holding the value: the value itself for 32- and 64-bit types,
  // the aligned 32-bit word around it for narrower ones.
  const int width = ir::BitWidth(t) == 1 ? 8 : ir::BitWidth(t);
  const bool wide = width == 64;
  const Id word_type = wide ? U64() : U32();
  if (wide)
    b_.Capability(spv::CapabilityInt64Atomics);
  const Id u64 = U64();
  Id word_addr = wide || width == 32 ? addr
                                     : b_.Op(spv::OpBitwiseAnd, u64,
                                             {addr, b_.ConstU64(~3ULL)});
  Id shift = 0;
  Id mask = 0;
  if (width < 32) {
    // Bit position of the value in its word (little-endian).
    Id byte = b_.Op(spv::OpUConvert, U32(),
                    {b_.Op(spv::OpBitwiseAnd, u64, {addr, b_.ConstU64(3)})});
    shift = b_.Op(spv::OpIMul, U32(), {byte, b_.ConstU32(8)});
    mask = b_.Op(spv::OpShiftLeftLogical, U32(),
                 {b_.ConstU32((1u << width) - 1), shift});
  }
  const Id uint_type = b_.IntType(width, false);
  const Id storage = StorageType(t);
  auto extract = [&](Id word) -> Id {
    Id bits = word;
    if (width < 32) {
      bits = b_.Op(spv::OpUConvert, uint_type,
                   {b_.Op(spv::OpShiftRightLogical, U32(), {word, shift})});
    }
    Id value =
        storage == uint_type ? bits : b_.Op(spv::OpBitcast, storage, {bits});
    if (t == PrimitiveType::kU1)
      value = AsBool(value, PrimitiveType::kU8);
    return value;
  };
  auto insert = [&](Id word, Id value) -> Id {
    if (t == PrimitiveType::kU1)
      value = Cast(value, t, PrimitiveType::kU8);
    Id bits = storage == uint_type ? value
                                   : b_.Op(spv::OpBitcast, uint_type, {value});
    if (width >= 32)
      return bits;
    Id wide_bits = b_.Op(spv::OpShiftLeftLogical, U32(),
                         {b_.Op(spv::OpUConvert, U32(), {bits}), shift});
    return b_.Op(spv::OpBitwiseOr, U32(),
                 {b_.Op(spv::OpBitwiseAnd, U32(),
                        {word, b_.Op(spv::OpNot, U32(), {mask})}),
                  wide_bits});
  };
  Id ptr = Pointer(word_type, word_addr);
  Id old_var = b_.LocalVariable(word_type);
  RetryUntil([&] {
    Id expected = Atomic(spv::OpAtomicLoad, word_type,
                         {ptr, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0)});
    Id desired = insert(expected, update(extract(expected)));
    Id seen = Atomic(spv::OpAtomicCompareExchange, word_type,
                     {ptr, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0),
                      b_.ConstU32(0), desired, expected});
    b_.OpVoid(spv::OpStore, {old_var, seen});
    return b_.Op(spv::OpIEqual, Bool(), {seen, expected});
  });
  return extract(b_.Op(spv::OpLoad, word_type, {old_var}));
}

Id ShaderEmitter::Atomic(spv::Op op, Id type, const std::vector<Id>& operands) {
  // Operand layout: pointer, scope, semantics (two for compare-exchange),
  // then the values.
  const size_t first_value = op == spv::OpAtomicCompareExchange ? 4 : 3;
  std::vector<Id> constants(operands.begin() + 1,
                            operands.begin() + first_value);
  AtomicForm* form = nullptr;
  for (AtomicForm& f : atomic_forms_) {
    if (f.op == op && f.type == type && f.constants == constants)
      form = &f;
  }
  if (form == nullptr) {
    AtomicForm f{op, type, constants, {}, b_.NewId()};
    for (size_t k = first_value; k < operands.size(); ++k)
      f.value_slots.push_back(static_cast<int>(k));
    atomic_forms_.push_back(f);
    form = &atomic_forms_.back();
  }
  std::vector<uint32_t> call = {form->function, operands[0]};
  for (int slot : form->value_slots)
    call.push_back(operands[slot]);
  return b_.Op(spv::OpFunctionCall, type, call);
}

void ShaderEmitter::BuildAtomicFunctions() {
  for (const AtomicForm& form : atomic_forms_) {
    const Id pointer =
        b_.PointerType(spv::StorageClassPhysicalStorageBuffer, form.type);
    std::vector<Id> params = {pointer};
    for (size_t k = 0; k < form.value_slots.size(); ++k)
      params.push_back(form.type);
    std::vector<Id> args;
    b_.BeginFunction(form.type, b_.FunctionType(form.type, params), params,
                     &args, form.function);
    // Other pointers may reach the same memory.
    b_.Decorate(args[0], spv::DecorationAliased);
    std::vector<uint32_t> operands = {args[0]};
    operands.insert(operands.end(), form.constants.begin(),
                    form.constants.end());
    operands.insert(operands.end(), args.begin() + 1, args.end());
    Id result = b_.Op(form.op, form.type, operands);
    b_.OpVoid(spv::OpReturnValue, {result});
    b_.EndFunction();
  }
}

Id ShaderEmitter::SplitWordAtomic(ir::AtomicOpKind op, Id addr, Id value,
                                  PrimitiveType t) {
  // 64-bit integer add, sub and bitwise ops as 32-bit atomics on the two
  // words: bitwise ops act per word, and an add carries into the high word
  // exactly when the low word's add wrapped, so the final value is exact
  // (the returned old value pairs the words each atomic saw).
  const Id u32 = U32(), u64 = U64();
  Id v = b_.Op(spv::OpBitcast, u64, {value});
  if (op == ir::AtomicOpKind::kSub)
    v = b_.Op(spv::OpSNegate, u64, {v});
  Id lo = b_.Op(spv::OpUConvert, u32, {v});
  Id hi = b_.Op(spv::OpUConvert, u32,
                {b_.Op(spv::OpShiftRightLogical, u64, {v, b_.ConstU64(32)})});
  Id lo_ptr = Pointer(u32, addr);
  Id hi_ptr = Pointer(u32, AddrAdd(addr, 4));
  const Id scope = b_.ConstU32(spv::ScopeDevice);
  const Id relaxed = b_.ConstU32(0);
  Id old_lo, old_hi;
  if (op == ir::AtomicOpKind::kAdd || op == ir::AtomicOpKind::kSub) {
    old_lo = Atomic(spv::OpAtomicIAdd, u32, {lo_ptr, scope, relaxed, lo});
    Id sum = b_.Op(spv::OpIAdd, u32, {old_lo, lo});
    Id carry = b_.Op(spv::OpSelect, u32,
                     {b_.Op(spv::OpULessThan, Bool(), {sum, old_lo}),
                      b_.ConstU32(1), b_.ConstU32(0)});
    old_hi =
        Atomic(spv::OpAtomicIAdd, u32,
               {hi_ptr, scope, relaxed, b_.Op(spv::OpIAdd, u32, {hi, carry})});
  } else {
    const spv::Op word_op = op == ir::AtomicOpKind::kBitAnd  ? spv::OpAtomicAnd
                            : op == ir::AtomicOpKind::kBitOr ? spv::OpAtomicOr
                                                             : spv::OpAtomicXor;
    old_lo = Atomic(word_op, u32, {lo_ptr, scope, relaxed, lo});
    old_hi = Atomic(word_op, u32, {hi_ptr, scope, relaxed, hi});
  }
  Id old =
      b_.Op(spv::OpBitwiseOr, u64,
            {b_.Op(spv::OpShiftLeftLogical, u64,
                   {b_.Op(spv::OpUConvert, u64, {old_hi}), b_.ConstU64(32)}),
             b_.Op(spv::OpUConvert, u64, {old_lo})});
  return RegType(t) == u64 ? old : b_.Op(spv::OpBitcast, RegType(t), {old});
}

Id ShaderEmitter::LockedUpdate(Id addr, PrimitiveType t,
                               const std::function<Id(Id)>& update) {
  // One of kNumLocks spin locks, chosen by the address. The loop runs the
  // update in the iteration that takes the lock, so invocations that share
  // a SIMD group and wait for each other still make progress.
  const Id u32 = U32(), u64 = U64();
  Id slot = b_.Op(
      spv::OpUConvert, u32,
      {b_.Op(spv::OpBitwiseAnd, u64,
             {b_.Op(spv::OpShiftRightLogical, u64, {addr, b_.ConstU64(3)}),
              b_.ConstU64(abi::kNumLocks - 1)})});
  Id lock_addr =
      AddrPlus(AddrAdd(RuntimeAddr(), abi::kRtLocks),
               b_.Op(spv::OpUConvert, u64,
                     {b_.Op(spv::OpIMul, u32, {slot, b_.ConstU32(4)})}));
  Id lock = Pointer(u32, lock_addr);
  const Id scope = b_.ConstU32(spv::ScopeDevice);
  const Id relaxed = b_.ConstU32(0);
  // The lock is taken and released with relaxed atomics: acquire/release
  // semantics make lavapipe lose updates.
  Id old_var = b_.LocalVariable(RegType(t));
  RetryUntil([&] {
    Id previous =
        Atomic(spv::OpAtomicCompareExchange, u32,
               {lock, scope, relaxed, relaxed, b_.ConstU32(1), b_.ConstU32(0)});
    Id taken = b_.Op(spv::OpIEqual, Bool(), {previous, b_.ConstU32(0)});
    If(taken, [&] {
      // The 64-bit value moves as two 32-bit atomics on its words: plain
      // accesses may be served from a core's cache (NVIDIA's L1), which
      // another core's update under the lock has not reached. A read is
      // an atomic or with zero, so SPIRV-Cross's atomic wrappers take it.
      Id lo_ptr = Pointer(u32, addr);
      Id hi_ptr = Pointer(u32, AddrAdd(addr, 4));
      Id lo = Atomic(spv::OpAtomicOr, u32, {lo_ptr, scope, relaxed, b_.ConstU32(0)});
      Id hi = Atomic(spv::OpAtomicOr, u32, {hi_ptr, scope, relaxed, b_.ConstU32(0)});
      Id bits = b_.Op(
          spv::OpBitwiseOr, u64,
          {b_.Op(spv::OpShiftLeftLogical, u64,
                 {b_.Op(spv::OpUConvert, u64, {hi}), b_.ConstU64(32)}),
           b_.Op(spv::OpUConvert, u64, {lo})});
      const Id type = RegType(t);
      Id old = type == u64 ? bits : b_.Op(spv::OpBitcast, type, {bits});
      b_.OpVoid(spv::OpStore, {old_var, old});
      Id updated = update(old);
      Id new_bits =
          type == u64 ? updated : b_.Op(spv::OpBitcast, u64, {updated});
      Atomic(spv::OpAtomicExchange, u32,
             {lo_ptr, scope, relaxed, b_.Op(spv::OpUConvert, u32, {new_bits})});
      Atomic(spv::OpAtomicExchange, u32,
             {hi_ptr, scope, relaxed,
              b_.Op(spv::OpUConvert, u32,
                    {b_.Op(spv::OpShiftRightLogical, u64,
                           {new_bits, b_.ConstU64(32)})})});
      Atomic(spv::OpAtomicExchange, u32,
             {lock, scope, relaxed, b_.ConstU32(0)});
    });
    return taken;
  });
  return b_.Op(spv::OpLoad, RegType(t), {old_var});
}

bool ShaderEmitter::IsUsed(const Stmt* s) {
  if (!used_computed_) {
    used_ = ir::UsedValues(kernel_);
    used_computed_ = true;
  }
  return used_.contains(s);
}

Id ShaderEmitter::FloatAdd(Id addr, Id value, PrimitiveType t) {
  const Id type = RegType(t);
  if ((t == PrimitiveType::kF32 && options_.caps.float32_atomic_add) ||
      (t == PrimitiveType::kF64 && options_.caps.float64_atomic_add)) {
    b_.Extension("SPV_EXT_shader_atomic_float_add");
    b_.Capability(t == PrimitiveType::kF32
                      ? spv::CapabilityAtomicFloat32AddEXT
                      : spv::CapabilityAtomicFloat64AddEXT);
    return Atomic(spv::OpAtomicFAddEXT, type,
                  {Pointer(type, addr), b_.ConstU32(spv::ScopeDevice),
                   b_.ConstU32(0), value});
  }
  auto add = [&](Id old) { return b_.Op(spv::OpFAdd, type, {old, value}); };
  if (ir::BitWidth(t) == 64 && !options_.caps.int64_atomics)
    return LockedUpdate(addr, t, add);
  return CasLoop(addr, t, add);
}

void ShaderEmitter::SubgroupAggregatedAdd(Id addr, Id value, PrimitiveType t) {
  b_.Capability(spv::CapabilityGroupNonUniform);
  b_.Capability(spv::CapabilityGroupNonUniformArithmetic);
  const Id subgroup = b_.ConstU32(spv::ScopeSubgroup);
  Id sum = b_.Op(spv::OpGroupNonUniformFAdd, RegType(t),
                 {subgroup, spv::GroupOperationReduce, value});
  Id leader = b_.Op(spv::OpGroupNonUniformElect, Bool(), {subgroup});
  If(leader, [&] { FloatAdd(addr, sum, t); });
}

absl::StatusOr<Id> ShaderEmitter::EmitAtomic(const ir::AtomicOpStmt& s) {
  const PrimitiveType t = s.type().element();
  const bool f = ir::IsFloat(t);
  if (ir::Isa<ir::SharedPtrStmt>(s.ptr()) &&
      !(f && (s.op() == ir::AtomicOpKind::kBitAnd ||
              s.op() == ir::AtomicOpKind::kBitOr ||
              s.op() == ir::AtomicOpKind::kBitXor ||
              s.op() == ir::AtomicOpKind::kCas))) {
    return SharedAtomic(s);
  }
  if (f && (s.op() == ir::AtomicOpKind::kBitAnd ||
            s.op() == ir::AtomicOpKind::kBitOr ||
            s.op() == ir::AtomicOpKind::kBitXor ||
            s.op() == ir::AtomicOpKind::kCas)) {
    return MakeError(
        ErrorKind::kType, s.loc(),
        absl::StrCat("in kernel '", kernel_.name(), "': ", ir::OpName(s.op()),
                     " needs an integer target"));
  }
  Id addr = Get(s.ptr());
  Id value = Get(s.value());
  const Id type = RegType(t);
  const int width = ir::BitWidth(t);
  const Id scope = b_.ConstU32(spv::ScopeDevice);
  const Id relaxed = b_.ConstU32(0);
  Id expected = s.expected() ? Get(s.expected()) : 0;
  auto update = [&](Id old) {
    if (s.op() != ir::AtomicOpKind::kCas)
      return Combine(s.op(), old, value, t);
    Id same = t == PrimitiveType::kU1
                  ? b_.Op(spv::OpLogicalEqual, Bool(), {old, expected})
                  : b_.Op(spv::OpIEqual, Bool(), {old, expected});
    return b_.Op(spv::OpSelect, type, {same, value, old});
  };
  const bool add_like =
      s.op() == ir::AtomicOpKind::kAdd || s.op() == ir::AtomicOpKind::kSub;
  const bool f32_or_f64 = t == PrimitiveType::kF32 || t == PrimitiveType::kF64;
  if (f32_or_f64 && add_like && options_.caps.subgroup_arithmetic &&
      ir::IsLaunchUniformPtr(*s.ptr()) && !IsUsed(&s)) {
    SubgroupAggregatedAdd(addr,
                          s.op() == ir::AtomicOpKind::kSub
                              ? b_.Op(spv::OpFNegate, type, {value})
                              : value,
                          t);
    return b_.Op(spv::OpUndef, type, {});  // nobody reads it
  }
  // Native float add where the device has it.
  if (f && add_like &&
      ((t == PrimitiveType::kF32 && options_.caps.float32_atomic_add) ||
       (t == PrimitiveType::kF64 && options_.caps.float64_atomic_add))) {
    return FloatAdd(addr,
                    s.op() == ir::AtomicOpKind::kSub
                        ? b_.Op(spv::OpFNegate, type, {value})
                        : value,
                    t);
  }
  const bool native_int =
      !f && (width == 32 || (width == 64 && options_.caps.int64_atomics)) &&
      NativeIntAtomic(s) != spv::OpNop;
  if (native_int) {
    if (width == 64)
      b_.Capability(spv::CapabilityInt64Atomics);
    if (s.op() == ir::AtomicOpKind::kCas) {
      return Atomic(
          spv::OpAtomicCompareExchange, type,
          {Pointer(type, addr), scope, relaxed, relaxed, value, expected});
    }
    return Atomic(NativeIntAtomic(s), type,
                  {Pointer(type, addr), scope, relaxed, value});
  }
  const bool splits =
      s.op() == ir::AtomicOpKind::kAdd || s.op() == ir::AtomicOpKind::kSub ||
      s.op() == ir::AtomicOpKind::kBitAnd ||
      s.op() == ir::AtomicOpKind::kBitOr || s.op() == ir::AtomicOpKind::kBitXor;
  if (width == 64 && !options_.caps.int64_atomics && !f && splits)
    return SplitWordAtomic(s.op(), addr, value, t);
  if (width == 64 && !options_.caps.int64_atomics)
    return LockedUpdate(addr, t, update);
  return CasLoop(addr, t, update);
}

}  // namespace quadrants::codegen::spirv::shader
