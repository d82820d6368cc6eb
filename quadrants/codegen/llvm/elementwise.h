#ifndef QUADRANTS_CODEGEN_LLVM_ELEMENTWISE_H_
#define QUADRANTS_CODEGEN_LLVM_ELEMENTWISE_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "llvm/IR/IRBuilder.h"
#include "quadrants/ir/constant.h"
#include "quadrants/ir/op_kinds.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/types.h"

namespace quadrants::codegen {

// Lowers the language's element-wise operations (casts, unary and binary
// ops) to LLVM instructions on one value per operand, or on `lanes`-wide
// vectors of them: the instructions are the same, only the types differ.
// Operations that need runtime functions (float math, integer floor
// division, modulo and power) go through the hooks, which the scalar and
// the SIMD-lane lowerings implement differently.
class Elementwise {
 public:
  // name: "sin", "pow", ...; args already in the op's float type (f32 or
  // f64; f16 is widened before the call).
  using MathHook = std::function<llvm::Value*(
      const char* name, std::vector<llvm::Value*> args, ir::PrimitiveType t)>;
  // name: "floordiv", "mod", "pow"; args of the op's integer type.
  using IntHook = std::function<llvm::Value*(
      const char* name, llvm::Value* a, llvm::Value* b, ir::PrimitiveType t)>;

  Elementwise(llvm::IRBuilder<>& b, int lanes, MathHook math, IntHook int_op)
      : b_(b), lanes_(lanes), math_(std::move(math)), int_(std::move(int_op)) {}

  int lanes() const { return lanes_; }
  // The type of one element (u1 is i1).
  llvm::Type* ScalarType(ir::PrimitiveType t) const;
  // The element type, widened to a vector in lane mode.
  llvm::Type* RegisterType(ir::PrimitiveType t) const;
  // `type` widened to a vector in lane mode.
  llvm::Type* Widen(llvm::Type* type) const;

  llvm::Value* AsBool(llvm::Value* v, ir::PrimitiveType t);
  llvm::Value* ToI64(llvm::Value* v, ir::PrimitiveType t);
  llvm::Value* Cast(llvm::Value* v, ir::PrimitiveType from,
                    ir::PrimitiveType to);
  // Null when the op is not element-wise lowerable.
  llvm::Value* Unary(ir::UnaryOpKind op, llvm::Value* x, ir::PrimitiveType in,
                     ir::PrimitiveType out);
  llvm::Value* Binary(ir::BinaryOpKind op, llvm::Value* x, llvm::Value* y,
                      ir::PrimitiveType t);
  // Round half away from zero (C's round), exactly.
  llvm::Value* Round(llvm::Value* x);
  // clz, popcnt or ffs of an integer, as i32.
  llvm::Value* BitCount(ir::UnaryOpKind op, llvm::Value* x);
  // C's frexp: {mantissa in [0.5, 1) with x's sign, i32 exponent}, with
  // zero, infinities and NaN returned unchanged with exponent 0. Computed on
  // the bits, so subnormals are exact even where the target flushes them.
  std::pair<llvm::Value*, llvm::Value*> Frexp(llvm::Value* x,
                                              ir::PrimitiveType t);
  // f16 math runs in f32.
  llvm::Value* Math(const char* name, std::vector<llvm::Value*> args,
                    ir::PrimitiveType t);
  // A constant, broadcast in lane mode.
  llvm::Value* Constant(const ir::Constant& c);
  // A scalar argument of type `t` from its 64-bit launch-context slot.
  llvm::Value* DecodeArgument(llvm::Value* slot, ir::PrimitiveType t);
  // A qd.random() value of type `t` from 64 uniformly distributed bits (i64,
  // or lanes of i64).
  llvm::Value* FromRandomBits(llvm::Value* bits, ir::PrimitiveType t);
  // Per-axis i32 indices of a linear cell number (i64, or lanes of i64)
  // over `axes` (axis, size) sorted by axis, row-major.
  std::vector<llvm::Value*> DecomposeCell(
      const std::vector<std::pair<int, int64_t>>& axes, llvm::Value* linear);

 private:
  llvm::IRBuilder<>& b_;
  int lanes_;
  MathHook math_;
  IntHook int_;
};

// The LLVM atomicrmw operation of atomic `s` in kernel `kernel`; a type
// error naming both when its op needs an integer target and the target is
// a float.
absl::StatusOr<llvm::AtomicRMWInst::BinOp> AtomicBinOp(
    const ir::AtomicOpStmt& s, absl::string_view kernel);

// One scalar atomic of `s`'s op at `ptr` (u1 values as bytes), returning
// the old value: atomicrmw where LLVM has the operation, a compare-exchange
// loop for atomic_mul, cmpxchg for atomic_cas (`expected` non-null). A type
// error naming the kernel when the op needs an integer target.
absl::StatusOr<llvm::Value*> EmitScalarAtomic(
    llvm::IRBuilder<>& b, const ir::AtomicOpStmt& s, absl::string_view kernel,
    llvm::Value* ptr, llvm::Value* value, llvm::Value* expected);
// Whether `op` lowers to one atomicrmw instruction (which lane code may
// combine across lanes); atomic_mul and atomic_cas do not, and
// atomic_exchange has no combination of lanes.
bool IsCombinableAtomic(ir::AtomicOpKind op);

// Calls runtime-module function `name` (declared on first use) with `args`.
llvm::Value* CallRuntime(llvm::IRBuilder<>& b, const std::string& name,
                         llvm::Type* result, std::vector<llvm::Value*> args);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_ELEMENTWISE_H_
