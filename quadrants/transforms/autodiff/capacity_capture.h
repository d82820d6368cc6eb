#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_CAPACITY_CAPTURE_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_CAPACITY_CAPTURE_H_

#include "quadrants/ir/size_expr.h"
#include "quadrants/ir/snode.h"
#include "quadrants/ir/stmt.h"

namespace quadrants::transforms::autodiff {

// The launch-time capacity of the adstacks of `loop` (a range_for in the
// offloaded forward kernel): its trip count plus 2, maximized over every
// loop index the bounds depend on. Leaves are constants, scalar arguments,
// ndarray shapes, integer field and ndarray reads, enclosing loop indices
// and loop variables stashed in locals, combined with + - * // % max (and
// min, bounded by max). Returns null for bounds outside that grammar (the
// caller falls back to default_ad_stack_size).
ir::SizeExpr::Ptr CaptureStackCapacity(const ir::Stmt& loop,
                                       const ir::SNodeTree& snodes);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_CAPACITY_CAPTURE_H_
