#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_GLOBAL_ACCESS_RULE_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_GLOBAL_ACCESS_RULE_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"

namespace quadrants::transforms::autodiff {

// The gradient kernel recomputes primal values by reading fields and
// ndarrays again, so a kernel must not overwrite an element after reading
// it. Reading `f[a]` and later writing `f[b]` is accepted when the two
// are provably different elements in every execution where the write
// follows the read:
//  - indices affine in loop indices and other values, differing by a
//    constant (`f[t]` then `f[t + 1]`, also across iterations of a serial
//    loop that walks forward);
//  - different constants, or index ranges that cannot meet (a constant
//    outside the range a loop writes).
// Everything else is a compilation error naming the variable as the user
// wrote it and both source lines. Reading an element that was written
// earlier is fine as long as it is not written again afterwards.
absl::Status CheckGlobalDataAccessRule(const ir::Kernel& kernel,
                                       const ir::SNodeTree& snodes);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_GLOBAL_ACCESS_RULE_H_
