// What a shader reports to the host: runtime errors (first one wins),
// assertions under debug, and print records in the print buffer.
#include "quadrants/codegen/spirv/shader_emitter_internal.h"

namespace quadrants::codegen::spirv::shader {

void ShaderEmitter::ReportError(uint32_t code, int site, Id v0, Id v1, Id v2) {
  // The first error wins: whoever swaps the code from 0 writes the rest.
  const Id u32 = U32();
  Id code_ptr = Pointer(u32, AddrAdd(RuntimeAddr(), abi::kRtErrorCode));
  Id previous = Atomic(spv::OpAtomicCompareExchange, u32,
                       {code_ptr, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0),
                        b_.ConstU32(0), b_.ConstU32(code), b_.ConstU32(0)});
  Id first = b_.Op(spv::OpIEqual, Bool(), {previous, b_.ConstU32(0)});
  If(first, [&] {
    Store(AddrAdd(RuntimeAddr(), abi::kRtErrorSite),
          b_.ConstU32(static_cast<uint32_t>(site)), u32, 4);
    Id values[3] = {v0, v1, v2};
    for (int k = 0; k < 3; ++k) {
      Store(AddrAdd(RuntimeAddr(), abi::kRtErrorValues + 8 * k), values[k],
            I64(), 8);
    }
  });
}

Id ShaderEmitter::F32BitsAsF64Bits(Id v) {
  // The host reads float values as f64 bits: widen by hand where the device
  // has no f64 (subnormals become zero).
  const Id u64 = U64();
  Id b = b_.Op(spv::OpUConvert, u64, {b_.Op(spv::OpBitcast, U32(), {v})});
  auto bits = [&](uint64_t shift, uint64_t mask) {
    return b_.Op(spv::OpBitwiseAnd, u64,
                 {b_.Op(spv::OpShiftRightLogical, u64, {b, b_.ConstU64(shift)}),
                  b_.ConstU64(mask)});
  };
  Id sign = b_.Op(spv::OpShiftLeftLogical, u64, {bits(31, 1), b_.ConstU64(63)});
  Id exponent = bits(23, 0xff);
  Id mantissa =
      b_.Op(spv::OpShiftLeftLogical, u64, {bits(0, 0x7fffff), b_.ConstU64(29)});
  Id normal =
      b_.Op(spv::OpBitwiseOr, u64,
            {b_.Op(spv::OpShiftLeftLogical, u64,
                   {b_.Op(spv::OpIAdd, u64, {exponent, b_.ConstU64(896)}),
                    b_.ConstU64(52)}),
             mantissa});
  Id special =
      b_.Op(spv::OpBitwiseOr, u64, {b_.ConstU64(0x7ffULL << 52), mantissa});
  Id r = b_.Op(spv::OpSelect, u64,
               {b_.Op(spv::OpIEqual, Bool(), {exponent, b_.ConstU64(255)}),
                special, normal});
  r = b_.Op(spv::OpSelect, u64,
            {b_.Op(spv::OpIEqual, Bool(), {exponent, b_.ConstU64(0)}),
             b_.ConstU64(0), r});
  return b_.Op(spv::OpBitcast, I64(),
               {b_.Op(spv::OpBitwiseOr, u64, {sign, r})});
}

Id ShaderEmitter::AsBits(const Stmt* value) {
  const PrimitiveType t = value->type().element();
  Id v = Get(value);
  if (ir::IsFloat(t)) {
    if (t != PrimitiveType::kF64 && !options_.caps.float64)
      return F32BitsAsF64Bits(Cast(v, t, PrimitiveType::kF32));
    return b_.Op(spv::OpBitcast, I64(), {Cast(v, t, PrimitiveType::kF64)});
  }
  return ToI64(v, t);
}

void ShaderEmitter::EmitAssert(const ir::AssertStmt& s) {
  if (!options_.debug)
    return;
  int site = AddSite(s.message(), s.loc());
  Id values[3] = {b_.ConstI64(0), b_.ConstI64(0), b_.ConstI64(0)};
  for (size_t k = 1; k < s.num_operands() && k <= 3; ++k) {
    sites_[site].value_types.push_back(s.operand(k)->type().element());
    values[k - 1] = AsBits(s.operand(k));
  }
  Id failed = b_.Op(spv::OpLogicalNot, Bool(),
                    {AsBool(Get(s.cond()), s.cond()->type().element())});
  If(failed, [&] {
    ReportError(abi::kErrorAssertion, site, values[0], values[1], values[2]);
  });
}

void ShaderEmitter::EmitPrint(const ir::DebugPrintStmt& s) {
  ir::PrintSite site{s.pieces(), s.specs(), {}, s.loc()};
  const uint32_t count = static_cast<uint32_t>(s.num_operands());
  std::vector<Id> bits;
  for (size_t k = 0; k < count; ++k) {
    site.types.push_back(s.operand(k)->type().element());
    bits.push_back(AsBits(s.operand(k)));
  }
  const int id = static_cast<int>(print_sites_.size());
  print_sites_.push_back(std::move(site));
  // Reserve the record's bytes; records that do not fit are counted.
  const Id u32 = U32();
  const uint32_t bytes = 8 + 8 * count;
  Id rt = RuntimeAddr();
  Id offset = Atomic(
      spv::OpAtomicIAdd, u32,
      {Pointer(u32, AddrAdd(rt, abi::kRtPrintUsed)),
       b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0), b_.ConstU32(bytes)});
  Id capacity = Load(u32, AddrAdd(rt, abi::kRtPrintCapacity), 4);
  Id end = b_.Op(spv::OpIAdd, u32, {offset, b_.ConstU32(bytes)});
  // Reservations only grow, so the records that fit form a prefix; an
  // offset that wrapped around is treated as not fitting.
  Id fits = b_.Op(spv::OpLogicalAnd, Bool(),
                  {b_.Op(spv::OpULessThanEqual, Bool(), {end, capacity}),
                   b_.Op(spv::OpUGreaterThan, Bool(), {end, offset})});
  Id merge = b_.NewId(), write = b_.NewId(), drop = b_.NewId();
  b_.OpVoid(spv::OpSelectionMerge, {merge, spv::SelectionControlMaskNone});
  b_.BranchConditional(fits, write, drop);
  b_.Label(write);
  Id record = AddrPlus(RuntimeWord(abi::kRtPrintBuffer),
                       b_.Op(spv::OpUConvert, U64(), {offset}));
  Store(record, b_.ConstI32(id), I32(), 4);
  Store(AddrAdd(record, 4), b_.ConstI32(static_cast<int32_t>(count)), I32(), 4);
  for (uint32_t k = 0; k < count; ++k)
    Store(AddrAdd(record, 8 + 8 * k), bits[k], I64(), 8);
  b_.Branch(merge);
  b_.Label(drop);
  Atomic(spv::OpAtomicIAdd, u32,
         {Pointer(u32, AddrAdd(rt, abi::kRtPrintDropped)),
          b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0), b_.ConstU32(1)});
  b_.Branch(merge);
  b_.Label(merge);
}

}  // namespace quadrants::codegen::spirv::shader
