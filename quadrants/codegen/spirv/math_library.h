#ifndef QUADRANTS_CODEGEN_SPIRV_MATH_LIBRARY_H_
#define QUADRANTS_CODEGEN_SPIRV_MATH_LIBRARY_H_

#include <map>
#include <vector>

#include "quadrants/codegen/spirv/module_builder.h"

namespace quadrants::codegen::spirv {

// f64 elementary functions as SPIR-V functions of the module being built.
// GLSL.std.450's transcendental instructions take 16- and 32-bit floats
// only, and their precision is the driver's; these reach about one ulp of
// f64 (argument reduction plus series with enough terms), so results match
// the CPU backend's C library. f32 math calls them too where the device has
// f64. A function's body is built once, after the caller's function, when
// Finish() runs.
class MathLibrary {
 public:
  enum class Fn {
    kSin,
    kCos,
    kTan,
    kExp,
    kExpm1,
    kLog,
    kTanh,
    kAtan,
    kAtan2,
    kAsin,
    kAcos,
    kPow,
  };

  explicit MathLibrary(ModuleBuilder& b) : b_(b) {}

  // A call of `fn` on f64 arguments (two for atan2(y, x) and pow(x, y)).
  Id Call(Fn fn, const std::vector<Id>& args);
  // Integer power by squaring in `type` (an integer type of the builder);
  // negative exponents give 0 unless the base is 1 or -1.
  Id IntPow(Id type, Id base, Id exponent);

  // Builds the bodies of every function called so far (and of those they
  // call). Must run outside any function.
  void Finish();

 private:
  Id Declare(Fn fn);
  void Build(Fn fn, Id id);
  void BuildIntPow(Id type, Id id);

  // Straight-line helpers on f64 values.
  Id F(double v);
  Id Add(Id a, Id b);
  Id Sub(Id a, Id b);
  Id Mul(Id a, Id b);
  Id Div(Id a, Id b);
  Id Neg(Id a);
  Id Lt(Id a, Id b);
  Id Gt(Id a, Id b);
  Id Eq(Id a, Id b);
  Id Select(Id cond, Id a, Id b);
  Id Abs(Id a);
  Id SignBit(Id a);
  // c[0] + x * (c[1] + x * (c[2] + ...)).
  Id Horner(Id x, const std::vector<double>& c);
  // Function bodies.
  Id SinCos(Id x, int which);  // 0: sin, 1: cos, 2: tan
  Id Exp(Id x);
  Id Expm1(Id x);
  Id Log(Id x);
  Id Atan(Id x);
  Id Atan2(Id y, Id x);

  ModuleBuilder& b_;
  std::map<Fn, Id> declared_;
  std::map<Fn, bool> built_;
  std::map<Id, Id> int_pow_;  // integer type -> function
  std::map<Id, bool> int_pow_built_;
};

}  // namespace quadrants::codegen::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_MATH_LIBRARY_H_
