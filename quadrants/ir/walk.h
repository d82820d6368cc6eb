#ifndef QUADRANTS_IR_WALK_H_
#define QUADRANTS_IR_WALK_H_

#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/stmt.h"

namespace quadrants::ir {

// Calls fn(stmt) for every statement of `block` in program order (a
// container before the statements of its blocks). `fn` must not insert or
// remove statements of the block being walked.
template <typename Fn>
void WalkBlock(const Block& block, Fn&& fn) {
  for (size_t i = 0; i < block.size(); ++i) {
    Stmt* stmt = block.at(i);
    fn(stmt);
    for (Block* child : stmt->blocks())
      WalkBlock(*child, fn);
  }
}

// The kernel's body, then the bodies of its real functions (whose code runs
// as part of the kernel's: what they read and write counts as the kernel's).
template <typename Fn>
void WalkKernel(const Kernel& kernel, Fn&& fn) {
  WalkBlock(*kernel.body(), fn);
  for (const auto& function : kernel.functions())
    WalkBlock(*function->body(), fn);
}

// The top-level statements of an offloaded kernel, each a task; a
// Compilation error naming the kernel when one is not (code generators
// take offloaded kernels only).
absl::StatusOr<std::vector<const OffloadedTaskStmt*>> OffloadedTasks(
    const Kernel& kernel);

// Replaces every use of `from` (as an operand anywhere in `kernel`) by `to`.
void ReplaceAllUses(const Kernel& kernel, Stmt* from, Stmt* to);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_WALK_H_
