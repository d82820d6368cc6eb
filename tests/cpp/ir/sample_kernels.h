// Small, well-formed kernels that together use every statement kind. Shared
// by the printer test (golden text) and the clone/hash test.
#ifndef TESTS_CPP_IR_SAMPLE_KERNELS_H_
#define TESTS_CPP_IR_SAMPLE_KERNELS_H_

#include <memory>
#include <string>
#include <vector>

#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/ir/stmt.h"
#include "quadrants/ir/types.h"
#include "quadrants/ir/verifier.h"

namespace quadrants::ir::samples {

// The SNode tree the sample kernels address:
//   root -> dense[i:8]     (kDense1D) -> place x:f32 (kFieldX)
//        -> dense[i:4,j:8] (kDense2D) -> place y:f32 (kFieldY)
inline constexpr int kDense1D = 1;
inline constexpr int kFieldX = 2;
inline constexpr int kDense2D = 3;
inline constexpr int kFieldY = 4;
// and, after them, a sparse level: root -> pointer[i:4] (kPointer1D, with
// its hidden table, list and count) -> place z:f32 (kFieldZ).
inline constexpr int kPointer1D = 5;
int FieldZ();
const SNodeTree& SampleTree();

// Gives `stmt` the scalar type `type`, as type checking would.
template <typename T>
T* Typed(T* stmt, PrimitiveType type) {
  stmt->set_type(DataType::Scalar(type));
  return stmt;
}

// Parameters of every kind, global loads, stores and atomics.
std::unique_ptr<Kernel> BuildParamsKernel();
// Locals, unary/binary/ternary ops; untyped unless `typed`.
std::unique_ptr<Kernel> BuildArithKernel(bool typed);
// Nested range_for, if/else, while, break, continue, assert with args.
std::unique_ptr<Kernel> BuildControlFlowKernel();
// range_for (bounds in the prologue), struct_for and serial tasks.
std::unique_ptr<Kernel> BuildOffloadedKernel();
// A 2-D struct_for over kDense2D.
std::unique_ptr<Kernel> BuildStructForKernel();
// Every adstack statement, one stack with a symbolic size.
std::unique_ptr<Kernel> BuildAdStackKernel();
// print with formatted values, a random number and the thread index.
std::unique_ptr<Kernel> BuildOutputKernel();
// A range_for over ndarrays with the bit counts, round, frexp, bit_cast,
// the thread index and atomic_cas / exchange / mul of 16 and 32 bits.
std::unique_ptr<Kernel> BuildBitsKernel();
// A recursive real function with a by-value and a result parameter, called
// from the kernel and from itself.
std::unique_ptr<Kernel> BuildRealFunctionKernel();
// A range_for of 64-thread blocks exchanging values through a shared array
// and subgroup shuffles, with block barriers and votes.
std::unique_ptr<Kernel> BuildSimtKernel();

struct SampleKernel {
  std::unique_ptr<Kernel> kernel;
  // Options under which the kernel verifies.
  VerifyOptions verify_options;
};
std::vector<SampleKernel> AllSampleKernels();

}  // namespace quadrants::ir::samples

#endif  // TESTS_CPP_IR_SAMPLE_KERNELS_H_
