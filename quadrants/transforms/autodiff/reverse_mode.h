#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_REVERSE_MODE_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_REVERSE_MODE_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"

namespace quadrants::transforms::autodiff {

struct ReverseModeOptions {
  // Without the adstack, a loop whose reversal needs per-iteration primal
  // values is a compile error; with it, such values are pushed and popped.
  bool adstack_enabled = false;
  // Stacks the derivative of each f32 sin and cos in a stacked loop during
  // the forward replay instead of evaluating it in the reverse sweep: for
  // backends that compute sin and cos of one value together.
  bool stack_trig_derivatives = false;
  // Lets the launch checkpoint stacked range-for loops whose trip count it
  // knows: the forward replay then keeps the carried state only at segment
  // starts when the launch asks, and the reverse sweep recomputes each
  // segment's iterations before sweeping them (see AdStackCapacityStmt).
  bool checkpointing = true;
};

// Turns an offloaded, type-checked kernel into its reverse-mode gradient
// kernel, in place. Tasks run in reverse order; each keeps its kind and
// bounds (the outer loop stays parallel) and its body becomes a forward
// replay without global side effects followed by the reverse sweep, which
// accumulates adjoints into the gradient fields (SNodeTree grad links) and
// into adjoint ndarrays: every float ndarray parameter `p` gets a companion
// parameter `p_grad` appended, in order. Global adjoints accumulate
// atomically, since threads can collide.
//
// Errors (QuadrantsCompilationError kind, naming the kernel and file:line):
// a field without a gradient field, a loop that needs the adstack while it
// is disabled, break/continue in a differentiated task body.
absl::Status MakeGradKernel(ir::Kernel& kernel, const ir::SNodeTree& snodes,
                            const ReverseModeOptions& options = {});

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_REVERSE_MODE_H_
