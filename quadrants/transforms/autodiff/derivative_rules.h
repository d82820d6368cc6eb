#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_DERIVATIVE_RULES_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_DERIVATIVE_RULES_H_

#include "quadrants/ir/builder.h"
#include "quadrants/ir/statements.h"

namespace quadrants::transforms::autodiff {

// What the chain rules need of a reverse sweep: where to emit, and the
// adjoints it keeps.
class AdjointSweep {
 public:
  virtual ~AdjointSweep() = default;
  virtual ir::IRBuilder& builder() = 0;
  // The adjoint accumulated for `s` so far.
  virtual ir::Stmt* LoadAdjoint(const ir::Stmt* s) = 0;
  // adjoint(target) += delta, for float values that carry an adjoint.
  virtual void Accumulate(const ir::Stmt* target, ir::Stmt* delta) = 0;
  // Ends the adjoint of `s`, which the rule has passed on.
  virtual void ResetAdjoint(const ir::Stmt* s) = 0;
  // The derivative (cos x, sin x) the replay stacked for sin or cos `s` in
  // the current reverse iteration, or null.
  virtual ir::Stmt* StackedDerivative(const ir::Stmt& s) = 0;
};

// Passes the adjoint of float op `s` on to its operands, whose replayed
// values are `x` (and `y`), `z` being its own: one rule per op kind.
void ReverseUnary(AdjointSweep& sweep, const ir::UnaryOpStmt& s, ir::Stmt* x,
                  ir::Stmt* z);
void ReverseBinary(AdjointSweep& sweep, const ir::BinaryOpStmt& s, ir::Stmt* x,
                   ir::Stmt* y, ir::Stmt* z);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_DERIVATIVE_RULES_H_
