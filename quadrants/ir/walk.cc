#include "quadrants/ir/walk.h"

namespace quadrants::ir {

void ReplaceAllUses(const Kernel& kernel, Stmt* from, Stmt* to) {
  WalkKernel(kernel, [&](Stmt* stmt) { stmt->ReplaceOperand(from, to); });
}

}  // namespace quadrants::ir
