#include "quadrants/ir/uses.h"

#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::ir {

absl::flat_hash_set<const Stmt*> UsedValues(const Kernel& kernel) {
  absl::flat_hash_set<const Stmt*> used;
  WalkKernel(kernel, [&](const Stmt* stmt) {
    for (const Stmt* operand : stmt->operands())
      used.insert(operand);
  });
  return used;
}

bool IsLaunchUniformPtr(const Stmt& ptr) {
  if (!Isa<FieldPtrStmt>(&ptr) && !Isa<NdarrayPtrStmt>(&ptr))
    return false;
  for (const Stmt* index : ptr.operands()) {
    if (!Isa<ConstStmt>(index))
      return false;
  }
  return true;
}

}  // namespace quadrants::ir
