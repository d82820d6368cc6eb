#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_ATOMIC_RESULTS_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_ATOMIC_RESULTS_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"

namespace quadrants::transforms::autodiff {

// The gradient kernel replays an atomic as a load of its element, which by
// then holds the final value, not the one the atomic returned. A returned
// value may therefore only reach integer data that has no adjoint: integer
// arithmetic, the indices and values of integer stores and atomics, and
// branches that hold nothing but such statements (an atomic counter handing
// out slots of an integer array). Any other use (a float, a float store's
// index, a loop bound) is a kGradient error naming the kernel and line.
absl::Status CheckAtomicResults(const ir::Kernel& kernel);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_ATOMIC_RESULTS_H_
