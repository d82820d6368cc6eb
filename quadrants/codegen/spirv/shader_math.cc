// Values and math of a shader: conversions and casts, unary and binary
// ops (Python's integer division and modulo), math functions (f64
// routines or the driver's f32 instructions), and random streams.
#include "quadrants/codegen/spirv/shader_emitter_internal.h"

namespace quadrants::codegen::spirv::shader {

Id ShaderEmitter::AsBool(Id v, PrimitiveType t) {
  if (t == PrimitiveType::kU1)
    return v;
  if (ir::IsFloat(t))
    return b_.Op(spv::OpFUnordNotEqual, Bool(), {v, Zero(t)});
  return b_.Op(spv::OpINotEqual, Bool(), {v, Zero(t)});
}

Id ShaderEmitter::IntConvert(Id v, PrimitiveType from, PrimitiveType to) {
  const int wf = ir::BitWidth(from), wt = ir::BitWidth(to);
  const bool sf = ir::IsSigned(from), st = ir::IsSigned(to);
  Id r = v;
  if (wf != wt) {
    // Widening extends by the source's signedness; narrowing truncates.
    const bool sign_extend = wt > wf && sf;
    r = b_.Op(sign_extend ? spv::OpSConvert : spv::OpUConvert,
              b_.IntType(wt, sign_extend), {v});
    if (sign_extend != st)
      r = b_.Op(spv::OpBitcast, RegType(to), {r});
    return r;
  }
  return sf == st ? v : b_.Op(spv::OpBitcast, RegType(to), {v});
}

Id ShaderEmitter::Cast(Id v, PrimitiveType from, PrimitiveType to) {
  if (from == to)
    return v;
  if (to == PrimitiveType::kU1)
    return AsBool(v, from);
  const Id target = RegType(to);
  if (from == PrimitiveType::kU1) {
    return b_.Op(
        spv::OpSelect, target,
        {v,
         ir::IsFloat(to) ? b_.ConstFloat(target, 1.0) : b_.ConstInt(target, 1),
         Zero(to)});
  }
  const bool ff = ir::IsFloat(from), ft = ir::IsFloat(to);
  if (ff && ft)
    return b_.Op(spv::OpFConvert, target, {v});
  if (!ff && ft) {
    return b_.Op(ir::IsSigned(from) ? spv::OpConvertSToF : spv::OpConvertUToF,
                 target, {v});
  }
  if (!ff && !ft)
    return IntConvert(v, from, to);
  // Float to integer saturates: out-of-range values clamp and NaN gives 0,
  // as the constant folder and the LLVM backends do.
  const int width = ir::BitWidth(to);
  const bool is_signed = ir::IsSigned(to);
  const double hi =
      is_signed ? std::ldexp(1.0, width - 1) : std::ldexp(1.0, width);
  const double lo = is_signed ? -std::ldexp(1.0, width - 1) : 0.0;
  const Id ftype = RegType(from);
  // Compare in f64 where f32/f16 cannot hold the bound exactly.
  Id x = v;
  Id xt = ftype;
  if (from == PrimitiveType::kF16) {
    xt = b_.FloatType(32);
    x = b_.Op(spv::OpFConvert, xt, {v});
  }
  Id converted =
      b_.Op(is_signed ? spv::OpConvertFToS : spv::OpConvertFToU, target, {x});
  const Id max_value = b_.ConstInt(
      target, is_signed
                  ? (uint64_t{1} << (width - 1)) - 1
                  : (width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1));
  const Id min_value =
      b_.ConstInt(target, is_signed ? ~uint64_t{0} << (width - 1) : 0);
  Id too_high =
      b_.Op(spv::OpFOrdGreaterThanEqual, Bool(), {x, b_.ConstFloat(xt, hi)});
  Id too_low = b_.Op(is_signed ? spv::OpFOrdLessThan : spv::OpFOrdLessThanEqual,
                     Bool(), {x, b_.ConstFloat(xt, lo)});
  Id r = b_.Op(spv::OpSelect, target, {too_high, max_value, converted});
  r = b_.Op(spv::OpSelect, target, {too_low, min_value, r});
  Id nan = b_.Op(spv::OpIsNan, Bool(), {x});
  return b_.Op(spv::OpSelect, target, {nan, Zero(to), r});
}

Id ShaderEmitter::Math(Fn fn, std::vector<Id> args, PrimitiveType t,
                       GLSLstd450 f32_inst) {
  const Id f64 = b_.FloatType(64);
  if (t == PrimitiveType::kF64)
    return math_.Call(fn, args);
  if (options_.caps.float64) {
    // f32 and f16 through the f64 routines, rounded once at the end.
    for (Id& a : args)
      a = b_.Op(spv::OpFConvert, f64, {a});
    return b_.Op(spv::OpFConvert, RegType(t), {math_.Call(fn, args)});
  }
  // Without f64: the driver's f32 instruction (f16 widened to f32).
  const Id f32 = b_.FloatType(32);
  const bool half = t == PrimitiveType::kF16;
  for (Id& a : args) {
    if (half)
      a = b_.Op(spv::OpFConvert, f32, {a});
  }
  Id r;
  if (fn == Fn::kPow) {
    // GLSL pow is undefined for negative bases: take |x|, then the sign an
    // odd integral exponent gives (NaN for other exponents).
    Id ax = b_.Glsl(GLSLstd450FAbs, f32, {args[0]});
    Id magnitude = b_.Glsl(GLSLstd450Pow, f32, {ax, args[1]});
    Id integral = b_.Op(spv::OpFOrdEqual, Bool(),
                        {b_.Glsl(GLSLstd450Floor, f32, {args[1]}), args[1]});
    Id half_y = b_.Op(spv::OpFMul, f32, {args[1], b_.ConstFloat(f32, 0.5)});
    Id odd = b_.Op(spv::OpFOrdNotEqual, Bool(),
                   {b_.Glsl(GLSLstd450Floor, f32, {half_y}), half_y});
    Id negative =
        b_.Op(spv::OpSelect, f32,
              {integral,
               b_.Op(spv::OpSelect, f32,
                     {odd, b_.Op(spv::OpFNegate, f32, {magnitude}), magnitude}),
               b_.ConstFloat(f32, NAN)});
    r = b_.Op(
        spv::OpSelect, f32,
        {b_.Op(spv::OpFOrdLessThan, Bool(), {args[0], b_.ConstFloat(f32, 0.0)}),
         negative, magnitude});
  } else {
    std::vector<uint32_t> operands = {b_.GlslStd450(),
                                      static_cast<uint32_t>(f32_inst)};
    operands.insert(operands.end(), args.begin(), args.end());
    r = b_.Op(spv::OpExtInst, f32, operands);
  }
  return half ? b_.Op(spv::OpFConvert, RegType(t), {r}) : r;
}

absl::StatusOr<Id> ShaderEmitter::EmitUnary(const ir::UnaryOpStmt& s) {
  Id x = Get(s.input());
  const PrimitiveType in = s.input()->type().element();
  const PrimitiveType out = s.type().element();
  const bool is_float = ir::IsFloat(in);
  const Id type = RegType(in);
  switch (s.op()) {
    case UnaryOpKind::kCast:
      return Cast(x, in, out);
    case UnaryOpKind::kNeg:
      if (in == PrimitiveType::kU1)
        return x;  // -True is True in one bit
      return b_.Op(is_float ? spv::OpFNegate : spv::OpSNegate, type, {x});
    case UnaryOpKind::kBitNot:
      if (in == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalNot, Bool(), {x});
      return b_.Op(spv::OpNot, type, {x});
    case UnaryOpKind::kLogicalNot:
      return b_.Op(spv::OpLogicalNot, Bool(), {AsBool(x, in)});
    case UnaryOpKind::kAbs:
      if (is_float)
        return b_.Glsl(GLSLstd450FAbs, type, {x});
      if (!ir::IsSigned(in) || in == PrimitiveType::kU1)
        return x;
      return b_.Op(spv::OpSelect, type,
                   {b_.Op(spv::OpSLessThan, Bool(), {x, Zero(in)}),
                    b_.Op(spv::OpSNegate, type, {x}), x});
    case UnaryOpKind::kStopGrad:
      return x;
    case UnaryOpKind::kFloor:
      return is_float ? b_.Glsl(GLSLstd450Floor, type, {x}) : x;
    case UnaryOpKind::kCeil:
      return is_float ? b_.Glsl(GLSLstd450Ceil, type, {x}) : x;
    case UnaryOpKind::kSqrt:
      return b_.Glsl(GLSLstd450Sqrt, type, {x});
    case UnaryOpKind::kRsqrt:
      return b_.Op(
          spv::OpFDiv, type,
          {b_.ConstFloat(type, 1.0), b_.Glsl(GLSLstd450Sqrt, type, {x})});
    case UnaryOpKind::kSin:
      return Math(Fn::kSin, {x}, in, GLSLstd450Sin);
    case UnaryOpKind::kCos:
      return Math(Fn::kCos, {x}, in, GLSLstd450Cos);
    case UnaryOpKind::kTan:
      return Math(Fn::kTan, {x}, in, GLSLstd450Tan);
    case UnaryOpKind::kTanh:
      return Math(Fn::kTanh, {x}, in, GLSLstd450Tanh);
    case UnaryOpKind::kExp:
      return Math(Fn::kExp, {x}, in, GLSLstd450Exp);
    case UnaryOpKind::kLog:
      return Math(Fn::kLog, {x}, in, GLSLstd450Log);
    case UnaryOpKind::kAsin:
      return Math(Fn::kAsin, {x}, in, GLSLstd450Asin);
    case UnaryOpKind::kAcos:
      return Math(Fn::kAcos, {x}, in, GLSLstd450Acos);
    case UnaryOpKind::kRound:
      return Round(x, in);
    case UnaryOpKind::kClz:
    case UnaryOpKind::kPopcnt:
    case UnaryOpKind::kFfs:
      return BitCount(s.op(), x, in);
    case UnaryOpKind::kBitCast:
      return b_.Op(spv::OpBitcast, RegType(out), {x});
    case UnaryOpKind::kFrexpMantissa:
      return Frexp(x, in).first;
    case UnaryOpKind::kFrexpExponent:
      return Frexp(x, in).second;
  }
  return Unsupported(s, "this unary op");
}

Id ShaderEmitter::Round(Id x, PrimitiveType t) {
  // Half away from zero, exactly: x - trunc(x) is exact, so comparing it
  // with 1/2 decides (GLSL's Round leaves halfway cases to the driver).
  const Id type = RegType(t);
  Id truncated = b_.Glsl(GLSLstd450Trunc, type, {x});
  Id frac =
      b_.Glsl(GLSLstd450FAbs, type, {b_.Op(spv::OpFSub, type, {x, truncated})});
  Id step = b_.Op(spv::OpSelect, type,
                  {b_.Op(spv::OpFOrdLessThan, Bool(), {x, Zero(t)}),
                   b_.ConstFloat(type, -1.0), b_.ConstFloat(type, 1.0)});
  Id half = b_.Op(spv::OpFOrdGreaterThanEqual, Bool(),
                  {frac, b_.ConstFloat(type, 0.5)});
  return b_.Op(spv::OpSelect, type,
               {half, b_.Op(spv::OpFAdd, type, {truncated, step}), truncated});
}

Id ShaderEmitter::BitCount32(UnaryOpKind op, Id word) {
  // FindUMsb, FindILsb and (on Vulkan) OpBitCount take 32-bit operands;
  // the first two give -1 for 0.
  const Id i32 = I32();
  switch (op) {
    case UnaryOpKind::kPopcnt:
      return b_.Op(spv::OpBitCount, i32, {word});
    case UnaryOpKind::kClz:
      return b_.Op(spv::OpISub, i32,
                   {b_.ConstI32(31), b_.Glsl(GLSLstd450FindUMsb, i32, {word})});
    default:  // ffs
      return b_.Op(spv::OpIAdd, i32,
                   {b_.Glsl(GLSLstd450FindILsb, i32, {word}), b_.ConstI32(1)});
  }
}

Id ShaderEmitter::BitCount(UnaryOpKind op, Id x, PrimitiveType t) {
  const int width = ir::BitWidth(t);
  const Id i32 = I32(), u32 = U32();
  // The unsigned bit pattern, zero-extended.
  const PrimitiveType pattern =
      width == 64
          ? PrimitiveType::kU64
          : (width == 32
                 ? PrimitiveType::kU32
                 : (width == 16 ? PrimitiveType::kU16 : PrimitiveType::kU8));
  Id bits = IntConvert(x, t, pattern);
  if (width < 64) {
    Id word = IntConvert(bits, pattern, PrimitiveType::kU32);
    Id r = BitCount32(op, word);
    if (op != UnaryOpKind::kClz || width == 32)
      return r;
    return b_.Op(spv::OpISub, i32, {r, b_.ConstI32(32 - width)});
  }
  Id lo = b_.Op(spv::OpUConvert, u32, {bits});
  Id hi =
      b_.Op(spv::OpUConvert, u32,
            {b_.Op(spv::OpShiftRightLogical, U64(), {bits, b_.ConstU64(32)})});
  Id lo_r = BitCount32(op, lo), hi_r = BitCount32(op, hi);
  auto nonzero = [&](Id w) {
    return b_.Op(spv::OpINotEqual, Bool(), {w, b_.ConstU32(0)});
  };
  auto plus32 = [&](Id r) {
    return b_.Op(spv::OpIAdd, i32, {r, b_.ConstI32(32)});
  };
  switch (op) {
    case UnaryOpKind::kPopcnt:
      return b_.Op(spv::OpIAdd, i32, {lo_r, hi_r});
    case UnaryOpKind::kClz:
      return b_.Op(spv::OpSelect, i32, {nonzero(hi), hi_r, plus32(lo_r)});
    default:  // ffs: the low half first; 0 when both halves are
      return b_.Op(spv::OpSelect, i32,
                   {nonzero(lo), lo_r,
                    b_.Op(spv::OpSelect, i32,
                          {nonzero(hi), plus32(hi_r), b_.ConstI32(0)})});
  }
}

std::pair<Id, Id> ShaderEmitter::Frexp(Id x, PrimitiveType t) {
  if (t == PrimitiveType::kF16) {
    // Every half is a normal f32; the mantissa narrows back exactly.
    auto [m, e] = Frexp(b_.Op(spv::OpFConvert, b_.FloatType(32), {x}),
                        PrimitiveType::kF32);
    return {b_.Op(spv::OpFConvert, RegType(t), {m}), e};
  }
  // On the bits, so subnormals are exact even where the device flushes them.
  const bool wide = t == PrimitiveType::kF64;
  const PrimitiveType ut = wide ? PrimitiveType::kU64 : PrimitiveType::kU32;
  const int width = wide ? 64 : 32;
  const int mant = wide ? 52 : 23;  // stored fraction bits
  const uint64_t bias = wide ? 1023 : 127;
  const uint64_t exp_mask = wide ? 0x7ff : 0xff;
  const uint64_t frac_mask = (uint64_t{1} << mant) - 1;
  const Id it = RegType(ut);
  auto c = [&](uint64_t v) { return b_.ConstInt(it, v); };
  auto op = [&](spv::Op code, Id a, Id b) { return b_.Op(code, it, {a, b}); };
  Id bits = b_.Op(spv::OpBitcast, it, {x});
  Id field = op(spv::OpBitwiseAnd, op(spv::OpShiftRightLogical, bits, c(mant)),
                c(exp_mask));
  Id frac = op(spv::OpBitwiseAnd, bits, c(frac_mask));
  Id sign = op(spv::OpBitwiseAnd, bits, c(uint64_t{1} << (width - 1)));
  // A subnormal's fraction, of highest set bit p, is normalized by shifting
  // that bit to the implicit one's place; its exponent is p + 2 - bias - mant.
  Id lz = IntConvert(BitCount(UnaryOpKind::kClz, frac, ut), PrimitiveType::kI32,
                     ut);
  Id p = op(spv::OpISub, c(width - 1), lz);
  Id sub_frac =
      op(spv::OpBitwiseAnd,
         op(spv::OpShiftLeftLogical, frac, op(spv::OpISub, c(mant), p)),
         c(frac_mask));
  Id subnormal = b_.Op(spv::OpIEqual, Bool(), {field, c(0)});
  Id exponent = b_.Op(spv::OpSelect, it,
                      {subnormal, op(spv::OpISub, p, c(bias + mant - 2)),
                       op(spv::OpISub, field, c(bias - 1))});
  Id mantissa_bits =
      op(spv::OpBitwiseOr, op(spv::OpBitwiseOr, sign, c((bias - 1) << mant)),
         b_.Op(spv::OpSelect, it, {subnormal, sub_frac, frac}));
  // Zero, infinities and NaN: x itself, exponent 0.
  Id special =
      b_.Op(spv::OpLogicalOr, Bool(),
            {b_.Op(spv::OpIEqual, Bool(), {field, c(exp_mask)}),
             b_.Op(spv::OpLogicalAnd, Bool(),
                   {subnormal, b_.Op(spv::OpIEqual, Bool(), {frac, c(0)})})});
  Id mantissa =
      b_.Op(spv::OpSelect, RegType(t),
            {special, x, b_.Op(spv::OpBitcast, RegType(t), {mantissa_bits})});
  exponent = b_.Op(spv::OpSelect, it, {special, c(0), exponent});
  return {mantissa, IntConvert(exponent, ut, PrimitiveType::kI32)};
}

Id ShaderEmitter::IntDivMod(bool mod, Id x, Id y, PrimitiveType t) {
  // Python semantics: floor division, the remainder takes the divisor's
  // sign; division by zero gives 0 instead of trapping.
  const Id type = RegType(t);
  const Id zero = Zero(t), one = b_.ConstInt(type, 1);
  Id y_zero = b_.Op(spv::OpIEqual, Bool(), {y, zero});
  if (!ir::IsSigned(t)) {
    Id safe = b_.Op(spv::OpSelect, type, {y_zero, one, y});
    Id r = b_.Op(mod ? spv::OpUMod : spv::OpUDiv, type, {x, safe});
    return b_.Op(spv::OpSelect, type, {y_zero, zero, r});
  }
  const Id minus_one = b_.ConstInt(type, ~uint64_t{0});
  Id y_minus_one = b_.Op(spv::OpIEqual, Bool(), {y, minus_one});
  Id special = b_.Op(spv::OpLogicalOr, Bool(), {y_zero, y_minus_one});
  Id safe = b_.Op(spv::OpSelect, type, {special, one, y});
  Id q = b_.Op(spv::OpSDiv, type, {x, safe});
  // Vulkan leaves OpSRem and OpSMod undefined for negative operands (NVIDIA's
  // driver does not give C's remainder); OpSDiv truncates as C does.
  Id r = b_.Op(spv::OpISub, type, {x, b_.Op(spv::OpIMul, type, {q, safe})});
  // Adjust where the remainder and the divisor have different signs.
  Id r_nonzero = b_.Op(spv::OpINotEqual, Bool(), {r, zero});
  Id signs_differ = b_.Op(spv::OpLogicalNotEqual, Bool(),
                          {b_.Op(spv::OpSLessThan, Bool(), {r, zero}),
                           b_.Op(spv::OpSLessThan, Bool(), {safe, zero})});
  Id adjust = b_.Op(spv::OpLogicalAnd, Bool(), {r_nonzero, signs_differ});
  if (mod) {
    Id fixed = b_.Op(spv::OpSelect, type,
                     {adjust, b_.Op(spv::OpIAdd, type, {r, safe}), r});
    return b_.Op(spv::OpSelect, type, {special, zero, fixed});
  }
  Id fixed = b_.Op(spv::OpSelect, type,
                   {adjust, b_.Op(spv::OpISub, type, {q, one}), q});
  Id negated = b_.Op(spv::OpSNegate, type, {x});
  return b_.Op(spv::OpSelect, type,
               {y_zero, zero,
                b_.Op(spv::OpSelect, type, {y_minus_one, negated, fixed})});
}

Id ShaderEmitter::MinMax(bool is_min, Id x, Id y, PrimitiveType t) {
  const Id type = RegType(t);
  if (ir::IsFloat(t))
    return b_.Glsl(is_min ? GLSLstd450NMin : GLSLstd450NMax, type, {x, y});
  if (t == PrimitiveType::kU1) {
    return b_.Op(is_min ? spv::OpLogicalAnd : spv::OpLogicalOr, Bool(), {x, y});
  }
  Id less = b_.Op(ir::IsSigned(t) ? spv::OpSLessThan : spv::OpULessThan, Bool(),
                  {x, y});
  return is_min ? b_.Op(spv::OpSelect, type, {less, x, y})
                : b_.Op(spv::OpSelect, type, {less, y, x});
}

Id ShaderEmitter::Compare(BinaryOpKind op, Id x, Id y, PrimitiveType t) {
  const bool f = ir::IsFloat(t), sgn = ir::IsSigned(t);
  if (t == PrimitiveType::kU1) {
    // false < true, as for unsigned integers.
    x = Cast(x, t, PrimitiveType::kU32);
    y = Cast(y, t, PrimitiveType::kU32);
    return Compare(op, x, y, PrimitiveType::kU32);
  }
  spv::Op code = spv::OpNop;
  switch (op) {
    case BinaryOpKind::kLt:
      code =
          f ? spv::OpFOrdLessThan : (sgn ? spv::OpSLessThan : spv::OpULessThan);
      break;
    case BinaryOpKind::kLe:
      code = f ? spv::OpFOrdLessThanEqual
               : (sgn ? spv::OpSLessThanEqual : spv::OpULessThanEqual);
      break;
    case BinaryOpKind::kGt:
      code = f ? spv::OpFOrdGreaterThan
               : (sgn ? spv::OpSGreaterThan : spv::OpUGreaterThan);
      break;
    case BinaryOpKind::kGe:
      code = f ? spv::OpFOrdGreaterThanEqual
               : (sgn ? spv::OpSGreaterThanEqual : spv::OpUGreaterThanEqual);
      break;
    case BinaryOpKind::kEq:
      code = f ? spv::OpFOrdEqual : spv::OpIEqual;
      break;
    default:
      code = f ? spv::OpFUnordNotEqual : spv::OpINotEqual;
      break;
  }
  return b_.Op(code, Bool(), {x, y});
}

absl::StatusOr<Id> ShaderEmitter::EmitBinary(const ir::BinaryOpStmt& s) {
  Id x = Get(s.lhs());
  Id y = Get(s.rhs());
  const PrimitiveType t = s.lhs()->type().element();
  const bool f = ir::IsFloat(t);
  const Id type = RegType(t);
  const bool boolean = t == PrimitiveType::kU1;
  if (boolean &&
      (s.op() == BinaryOpKind::kAdd || s.op() == BinaryOpKind::kSub ||
       s.op() == BinaryOpKind::kMul || s.op() == BinaryOpKind::kFloorDiv ||
       s.op() == BinaryOpKind::kMod || s.op() == BinaryOpKind::kPow ||
       s.op() == BinaryOpKind::kShl || s.op() == BinaryOpKind::kShr)) {
    // One-bit arithmetic, computed in u8 and truncated to its low bit.
    Id a = Cast(x, t, PrimitiveType::kU8), c = Cast(y, t, PrimitiveType::kU8);
    const Id u8 = RegType(PrimitiveType::kU8);
    Id r;
    switch (s.op()) {
      case BinaryOpKind::kAdd:
        r = b_.Op(spv::OpIAdd, u8, {a, c});
        break;
      case BinaryOpKind::kSub:
        r = b_.Op(spv::OpISub, u8, {a, c});
        break;
      case BinaryOpKind::kMul:
        r = b_.Op(spv::OpIMul, u8, {a, c});
        break;
      case BinaryOpKind::kFloorDiv:
        r = IntDivMod(false, a, c, PrimitiveType::kU8);
        break;
      case BinaryOpKind::kMod:
        r = IntDivMod(true, a, c, PrimitiveType::kU8);
        break;
      case BinaryOpKind::kPow:
        r = math_.IntPow(u8, a, c);
        break;
      default:
        r = a;  // shifts of one bit by its width (1) leave it unchanged
        break;
    }
    return b_.Op(spv::OpINotEqual, Bool(),
                 {b_.Op(spv::OpBitwiseAnd, u8, {r, b_.ConstInt(u8, 1)}),
                  b_.ConstInt(u8, 0)});
  }
  switch (s.op()) {
    case BinaryOpKind::kAdd:
      return b_.Op(f ? spv::OpFAdd : spv::OpIAdd, type, {x, y});
    case BinaryOpKind::kSub:
      return b_.Op(f ? spv::OpFSub : spv::OpISub, type, {x, y});
    case BinaryOpKind::kMul:
      return b_.Op(f ? spv::OpFMul : spv::OpIMul, type, {x, y});
    case BinaryOpKind::kDiv:
      return b_.Op(spv::OpFDiv, type, {x, y});
    case BinaryOpKind::kFloorDiv:
      if (f) {
        return b_.Glsl(GLSLstd450Floor, type,
                       {b_.Op(spv::OpFDiv, type, {x, y})});
      }
      return IntDivMod(false, x, y, t);
    case BinaryOpKind::kMod:
      if (f) {
        Id q =
            b_.Glsl(GLSLstd450Floor, type, {b_.Op(spv::OpFDiv, type, {x, y})});
        return b_.Op(spv::OpFSub, type, {x, b_.Op(spv::OpFMul, type, {y, q})});
      }
      return IntDivMod(true, x, y, t);
    case BinaryOpKind::kPow:
      if (f)
        return Math(Fn::kPow, {x, y}, t, GLSLstd450Pow);
      return math_.IntPow(type, x, y);
    case BinaryOpKind::kAtan2:
      return Math(Fn::kAtan2, {x, y}, t, GLSLstd450Atan2);
    case BinaryOpKind::kMin:
      return MinMax(true, x, y, t);
    case BinaryOpKind::kMax:
      return MinMax(false, x, y, t);
    case BinaryOpKind::kBitAnd:
      return boolean ? b_.Op(spv::OpLogicalAnd, Bool(), {x, y})
                     : b_.Op(spv::OpBitwiseAnd, type, {x, y});
    case BinaryOpKind::kBitOr:
      return boolean ? b_.Op(spv::OpLogicalOr, Bool(), {x, y})
                     : b_.Op(spv::OpBitwiseOr, type, {x, y});
    case BinaryOpKind::kBitXor:
      return boolean ? b_.Op(spv::OpLogicalNotEqual, Bool(), {x, y})
                     : b_.Op(spv::OpBitwiseXor, type, {x, y});
    case BinaryOpKind::kShl:
    case BinaryOpKind::kShr: {
      // Shift amounts wrap at the width, as on x86.
      const PrimitiveType yt = s.rhs()->type().element();
      Id amount = b_.Op(spv::OpBitwiseAnd, RegType(yt),
                        {y, b_.ConstInt(RegType(yt), ir::BitWidth(t) - 1)});
      if (s.op() == BinaryOpKind::kShl)
        return b_.Op(spv::OpShiftLeftLogical, type, {x, amount});
      return b_.Op(ir::IsSigned(t) ? spv::OpShiftRightArithmetic
                                   : spv::OpShiftRightLogical,
                   type, {x, amount});
    }
    case BinaryOpKind::kLt:
    case BinaryOpKind::kLe:
    case BinaryOpKind::kGt:
    case BinaryOpKind::kGe:
    case BinaryOpKind::kEq:
    case BinaryOpKind::kNe:
      if (boolean && (s.op() == BinaryOpKind::kEq)) {
        return b_.Op(spv::OpLogicalEqual, Bool(), {x, y});
      }
      if (boolean && (s.op() == BinaryOpKind::kNe)) {
        return b_.Op(spv::OpLogicalNotEqual, Bool(), {x, y});
      }
      return Compare(s.op(), x, y, t);
    case BinaryOpKind::kLogicalAnd:
      return b_.Op(spv::OpLogicalAnd, Bool(), {AsBool(x, t), AsBool(y, t)});
    case BinaryOpKind::kLogicalOr:
      return b_.Op(spv::OpLogicalOr, Bool(), {AsBool(x, t), AsBool(y, t)});
  }
  return Unsupported(s, "this binary op");
}

namespace {

// SplitMix64, as the LLVM runtime: each iteration's stream starts from the
// launch key mixed with the task and the iteration index.
Id Mix64(ModuleBuilder& b, Id z) {
  const Id u64 = b.IntType(64, false);
  auto step = [&](Id v, uint64_t shift, uint64_t mul) {
    Id x =
        b.Op(spv::OpBitwiseXor, u64,
             {v, b.Op(spv::OpShiftRightLogical, u64, {v, b.ConstU64(shift)})});
    return mul == 0 ? x : b.Op(spv::OpIMul, u64, {x, b.ConstU64(mul)});
  };
  z = step(z, 30, 0xbf58476d1ce4e5b9ULL);
  z = step(z, 27, 0x94d049bb133111ebULL);
  return step(z, 31, 0);
}

}  // namespace

void ShaderEmitter::SeedRandom(Id iteration) {
  if (random_state_ == 0)
    return;
  const Id u64 = U64();
  Id it = b_.Op(spv::OpBitcast, u64, {iteration});
  Id mixed = Mix64(
      b_, b_.Op(spv::OpBitwiseXor, u64,
                {it, b_.ConstU64(static_cast<uint64_t>(task_index_) << 48)}));
  Id seed = Mix64(
      b_, b_.Op(spv::OpBitwiseXor, u64, {CtxWord(abi::kCtxRandomKey), mixed}));
  b_.OpVoid(spv::OpStore, {random_state_, seed});
}

Id ShaderEmitter::NextRandom() {
  const Id u64 = U64();
  Id state = b_.Op(spv::OpIAdd, u64,
                   {b_.Op(spv::OpLoad, u64, {random_state_}),
                    b_.ConstU64(0x9e3779b97f4a7c15ULL)});
  b_.OpVoid(spv::OpStore, {random_state_, state});
  return Mix64(b_, state);
}

Id ShaderEmitter::EmitRandom(const ir::RandomStmt& s) {
  Id bits = NextRandom();
  const PrimitiveType t = s.type().element();
  const Id u64 = U64();
  auto unit = [&](int precision) {
    // k / 2^p for the top p bits k: exact in the type and never 1.
    Id k = b_.Op(spv::OpShiftRightLogical, u64,
                 {bits, b_.ConstU64(64 - precision)});
    const Id type = RegType(t);
    const Id work = t == PrimitiveType::kF16 ? b_.FloatType(32) : type;
    Id r = b_.Op(spv::OpFMul, work,
                 {b_.Op(spv::OpConvertUToF, work, {k}),
                  b_.ConstFloat(work, std::ldexp(1.0, -precision))});
    return work == type ? r : b_.Op(spv::OpFConvert, type, {r});
  };
  if (ir::IsFloat(t))
    return unit(ir::MantissaBits(t));
  if (t != PrimitiveType::kU1)
    return IntConvert(bits, PrimitiveType::kU64, t);
  return b_.Op(spv::OpSLessThan, Bool(),  // the top bit
               {b_.Op(spv::OpBitcast, I64(), {bits}), b_.ConstI64(0)});
}

}  // namespace quadrants::codegen::spirv::shader
