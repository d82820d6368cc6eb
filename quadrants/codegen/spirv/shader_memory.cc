// Types and memory of a shader: register and storage types, constants,
// kernel arguments, and the checked addresses of ndarray and field
// elements.
#include "quadrants/codegen/spirv/shader_emitter_internal.h"

namespace quadrants::codegen::spirv::shader {

Id ShaderEmitter::RegType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kU1:
      return b_.BoolType();
    case PrimitiveType::kI8:
      return b_.IntType(8, true);
    case PrimitiveType::kU8:
      return b_.IntType(8, false);
    case PrimitiveType::kI16:
      return b_.IntType(16, true);
    case PrimitiveType::kU16:
      return b_.IntType(16, false);
    case PrimitiveType::kI32:
      return b_.IntType(32, true);
    case PrimitiveType::kU32:
      return b_.IntType(32, false);
    case PrimitiveType::kI64:
      return b_.IntType(64, true);
    case PrimitiveType::kU64:
      return b_.IntType(64, false);
    case PrimitiveType::kF16:
      return b_.FloatType(16);
    case PrimitiveType::kF32:
      return b_.FloatType(32);
    case PrimitiveType::kF64:
      return b_.FloatType(64);
  }
  return b_.IntType(32, true);
}

Id ShaderEmitter::StorageType(PrimitiveType t) {
  return t == PrimitiveType::kU1 ? b_.IntType(8, false) : RegType(t);
}

Id ShaderEmitter::Zero(PrimitiveType t) {
  if (t == PrimitiveType::kU1)
    return b_.ConstBool(false);
  if (ir::IsFloat(t))
    return b_.ConstFloat(RegType(t), 0.0);
  return b_.ConstInt(RegType(t), 0);
}

Id ShaderEmitter::EmitConst(const ir::ConstStmt& s) {
  const ir::Constant& c = s.value();
  const PrimitiveType t = c.type();
  if (t == PrimitiveType::kU1)
    return b_.ConstBool(c.as_uint() != 0);
  if (c.is_float())
    return b_.ConstFloat(RegType(t), c.as_float());
  return b_.ConstInt(RegType(t), c.as_uint());
}

Id ShaderEmitter::EmitArgLoad(const ir::ArgLoadStmt& s) {
  Id slot = CtxWord(abi::kCtxArgs + 8 * s.arg());
  const PrimitiveType t = s.type().element();
  switch (t) {
    case PrimitiveType::kF64:
      return b_.Op(spv::OpBitcast, RegType(t), {slot});
    case PrimitiveType::kF32:
      return b_.Op(spv::OpBitcast, RegType(t),
                   {b_.Op(spv::OpUConvert, U32(), {slot})});
    case PrimitiveType::kF16:
      return b_.Op(spv::OpBitcast, RegType(t),
                   {b_.Op(spv::OpUConvert, b_.IntType(16, false), {slot})});
    case PrimitiveType::kU1:
      return b_.Op(spv::OpINotEqual, Bool(), {slot, b_.ConstU64(0)});
    default:
      return IntConvert(slot, PrimitiveType::kU64, t);
  }
}

void ShaderEmitter::CheckIndex(Id* valid, int site, int axis, Id index,
                               Id extent) {
  if (*valid == 0)
    return;
  // Unsigned comparison covers both ends (a negative index is huge).
  Id ok = b_.Op(spv::OpULessThan, Bool(),
                {b_.Op(spv::OpBitcast, U64(), {index}),
                 b_.Op(spv::OpBitcast, U64(), {extent})});
  If(b_.Op(spv::OpLogicalNot, Bool(), {ok}), [&] {
    ReportError(abi::kErrorOutOfBound, site, b_.ConstI64(axis), index, extent);
  });
  *valid = b_.Op(spv::OpLogicalAnd, Bool(), {*valid, ok});
}

Id ShaderEmitter::Guarded(Id valid, Id addr) {
  if (valid == 0)
    return addr;
  return b_.Op(spv::OpSelect, U64(),
               {valid, addr, AddrAdd(RuntimeAddr(), abi::kRtScratch)});
}

Id ShaderEmitter::EmitNdarrayPtr(const ir::NdarrayPtrStmt& s) {
  const ir::KernelParam& param = kernel_.params()[s.arg()];
  const int site = options_.check_out_of_bound
                       ? AddSite(NdarraySiteName(kernel_, s.arg()), s.loc())
                       : -1;
  const Id i64 = I64();
  Id data = CtxWord(abi::kCtxNdarrayData + 8 * s.arg());
  Id linear = b_.ConstI64(0);
  Id valid = options_.check_out_of_bound ? b_.ConstBool(true) : 0;
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    Id extent = b_.Op(
        spv::OpBitcast, i64,
        {CtxWord(abi::kCtxNdarrayShape +
                 8 * (abi::kMaxNdim * s.arg() + static_cast<uint32_t>(axis)))});
    Id index = ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    CheckIndex(&valid, site, static_cast<int>(axis), index, extent);
    linear = b_.Op(spv::OpIAdd, i64,
                   {b_.Op(spv::OpIMul, i64, {linear, extent}), index});
  }
  Id bytes = b_.Op(spv::OpIMul, i64, {linear, b_.ConstI64(Bytes(param.dtype))});
  return Guarded(valid, AddrPlus(data, b_.Op(spv::OpBitcast, U64(), {bytes})));
}

absl::StatusOr<Id> ShaderEmitter::EmitFieldPtr(const ir::FieldPtrStmt& s) {
  absl::StatusOr<ir::PlaceLayout> layout = snodes_.Layout(s.snode_id());
  if (!layout.ok())
    return layout.status();
  const int site =
      options_.check_out_of_bound
          ? AddSite(FieldSiteName(snodes_, s.snode_id()), s.loc())
          : -1;
  const Id i64 = I64();
  Id offset = b_.ConstI64(layout->offset);
  Id valid = options_.check_out_of_bound ? b_.ConstBool(true) : 0;
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    Id index = ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    CheckIndex(&valid, site, static_cast<int>(axis), index,
               b_.ConstI64(layout->shape[axis]));
    for (const ir::AxisDigit& d : layout->digits[axis]) {
      Id digit = index;
      if (d.divisor > 1)
        digit = b_.Op(spv::OpSDiv, i64, {digit, b_.ConstI64(d.divisor)});
      if (d.modulus > 0)
        digit = b_.Op(spv::OpSRem, i64, {digit, b_.ConstI64(d.modulus)});
      offset = b_.Op(spv::OpIAdd, i64,
                     {offset, b_.Op(spv::OpIMul, i64,
                                    {digit, b_.ConstI64(d.stride)})});
    }
  }
  Id root = RuntimeWord(abi::kRtRoot);
  return Guarded(valid, AddrPlus(root, b_.Op(spv::OpBitcast, U64(), {offset})));
}

}  // namespace quadrants::codegen::spirv::shader
