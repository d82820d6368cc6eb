#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_FORWARD_MODE_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_FORWARD_MODE_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"

namespace quadrants::transforms::autodiff {

// Turns an offloaded, type-checked kernel into its forward-mode (tangent)
// kernel, in place: every statement still computes its primal value, and
// every float value also carries a tangent, propagated by the derivative of
// its op. Loads of a field with a dual companion (SNodeTree::LinkDual) read
// the tangent from it; stores and atomic adds write it there. Each float
// ndarray parameter gets a dual ndarray parameter, appended after all the
// others in parameter order, used the same way. Fields without a dual and
// scalar arguments have zero tangents. Loops need no adstack: tangents
// flow forward with the primal values.
//
// Run over a reverse-mode kernel (AutodiffMode::kHvp), adjoint fields
// linked to duals get the adjoints' tangents, and each float adstack a
// twin stack that carries the tangents of its primal values and adjoints
// through every push, pop and checkpoint replay.
//
// Errors (QuadrantsCompilationError, naming the kernel and file:line): an
// atomic min/max into a field with a dual (not differentiable).
absl::Status MakeForwardKernel(ir::Kernel& kernel, const ir::SNodeTree& snodes);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_FORWARD_MODE_H_
