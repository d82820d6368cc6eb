#include "quadrants/ir/walk.h"

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants::ir {

absl::StatusOr<std::vector<const OffloadedTaskStmt*>> OffloadedTasks(
    const Kernel& kernel) {
  std::vector<const OffloadedTaskStmt*> tasks;
  for (size_t t = 0; t < kernel.body()->size(); ++t) {
    const auto* task = DynCast<OffloadedTaskStmt>(kernel.body()->at(t));
    if (task == nullptr) {
      return MakeError(
          ErrorKind::kCompilation,
          absl::StrCat("kernel '", kernel.name(),
                       "' must be offloaded before code generation"));
    }
    tasks.push_back(task);
  }
  return tasks;
}

void ReplaceAllUses(const Kernel& kernel, Stmt* from, Stmt* to) {
  WalkKernel(kernel, [&](Stmt* stmt) { stmt->ReplaceOperand(from, to); });
}

}  // namespace quadrants::ir
