#ifndef QUADRANTS_CODEGEN_LLVM_KERNEL_LOWERING_H_
#define QUADRANTS_CODEGEN_LLVM_KERNEL_LOWERING_H_

#include "absl/status/statusor.h"
#include "llvm/IR/LLVMContext.h"
#include "quadrants/adstack/stack_spec.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"
#include "quadrants/codegen/llvm/simt_target.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"

namespace quadrants::codegen {

struct LoweringOptions {
  // Emit index checks on every field and ndarray access.
  bool check_out_of_bound = false;
  // Emit `assert` statements, and adstack overflow checks everywhere.
  bool debug = false;
  // Every adstack capacity is forced (ad_stack_size > 0) rather than exact,
  // so pushes are always checked.
  bool adstack_size_forced = false;
  // Lay adstacks out word-interleaved across the launch's threads (GPUs,
  // where a warp pushes in lockstep) instead of one contiguous slice per
  // thread (CPUs, where a thread's slice stays in its cache).
  bool interleave_adstacks = false;
  // Sum float atomic adds to a launch-wide address (e.g. a scalar loss)
  // across each converged warp first (NVPTX), so the address sees one
  // atomic per warp.
  bool warp_aggregate_atomics = false;
  // Vector register bits for running parallel task bodies in SIMD lanes
  // (CPU); 0 runs every task one iteration at a time.
  int simd_vector_bits = 0;
  // The target's qd.simt primitives; null where it has none (the CPU).
  const SimtTarget* simt = nullptr;
  std::string triple;
  std::string data_layout;

  adstack::BoundsCheckPolicy adstack_checks() const {
    return {debug, check_out_of_bound, adstack_size_forced};
  }

  // Every field as text, so a compile cache keyed on it never mixes code
  // generated under different options.
  std::string ToString() const;
};

// Lowers a kernel of offloaded tasks (see transforms::LowerToTasks) to LLVM
// IR in `context`, with calls to the runtime module's qd_* helpers still
// unresolved (LinkRuntime resolves them).
absl::StatusOr<LoweredKernel> LowerKernel(const ir::Kernel& kernel,
                                          const ir::SNodeTree& snodes,
                                          const LoweringOptions& options,
                                          llvm::LLVMContext& context);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_KERNEL_LOWERING_H_
