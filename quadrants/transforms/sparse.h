#ifndef QUADRANTS_TRANSFORMS_SPARSE_H_
#define QUADRANTS_TRANSFORMS_SPARSE_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"

namespace quadrants::transforms {

// Lowers accesses to fields under sparse SNodes (pointer, bitmasked,
// dynamic) on an offloaded kernel, so that backends see plain field
// pointers, loads, stores, atomics and two pool operations:
//
// - A field pointer under a pointer or dynamic level gets the block of its
//   nearest such level: read from the level's table (0, a block of zeros,
//   when inactive), or, where the pointer is written, acquired from the
//   pool (kAcquire). A written bitmasked level sets its flag; a written
//   dynamic list raises its length. Each of those is a write of a hidden
//   place, lowered the same way, so ancestors activate too. Kernels'
//   qd.no_activate levels never activate: their writes to inactive cells
//   go to the pool's write-absorbing block.
// - A struct_for task over a field with a pointer or bitmasked level
//   becomes a serial task clearing the level's list, a range_for over the
//   level's cells appending the active ones, and a range_for over the
//   list's cells times the cells below; a dynamic level skips elements at
//   or past its length.
absl::Status LowerSparse(ir::Kernel& kernel, const ir::SNodeTree& snodes);

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_SPARSE_H_
