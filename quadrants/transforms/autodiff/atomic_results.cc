#include "quadrants/transforms/autodiff/atomic_results.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"
#include "quadrants/transforms/autodiff/loop_shapes.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::Stmt;
using ir::StmtKind;

// Whether `s` has no adjoint: its value (or stored value) is not a float.
bool IntegerOnly(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::kGlobalStore:
    case StmtKind::kLocalStore:
    case StmtKind::kAtomicOp:
      return !IsFloatValue(s.operand(1));
    case StmtKind::kIf:
    case StmtKind::kNdarrayPtr:
    case StmtKind::kFieldPtr:
    case StmtKind::kNdarrayShape:
    case StmtKind::kConst:
    case StmtKind::kArgLoad:
    case StmtKind::kLoopIndex:
      return !IsFloatValue(&s);
    case StmtKind::kUnaryOp:
    case StmtKind::kBinaryOp:
    case StmtKind::kTernaryOp:
    case StmtKind::kGlobalLoad:
    case StmtKind::kLocalLoad:
    case StmtKind::kAlloca:
      return !IsFloatValue(&s);
    default:
      return false;
  }
}

// Whether every statement in `s`'s blocks has no adjoint.
bool BranchIsIntegerOnly(const Stmt& s) {
  bool integer = true;
  for (const ir::Block* block : s.blocks()) {
    ir::WalkBlock(*block, [&](const Stmt* inner) {
      integer = integer && IntegerOnly(*inner);
    });
  }
  return integer;
}

class Checker {
 public:
  explicit Checker(const ir::Kernel& kernel) : kernel_(kernel) {}

  absl::Status Check() {
    // Twice: a loop may read a local before the statement that stores a
    // returned value into it.
    for (int pass = 0; pass < 2 && status_.ok(); ++pass)
      ir::WalkKernel(kernel_, [&](const Stmt* s) { Visit(*s); });
    return status_;
  }

 private:
  void Visit(const Stmt& s) {
    if (!status_.ok())
      return;
    const Stmt* reached = nullptr;
    for (const Stmt* operand : s.operands()) {
      if (from_atomic_.contains(operand))
        reached = operand;
    }
    if (reached == nullptr) {
      if (ir::Isa<ir::AtomicOpStmt>(&s))
        from_atomic_.insert(&s);
      return;
    }
    const bool allowed =
        ir::Isa<ir::IfStmt>(&s) ? BranchIsIntegerOnly(s) : IntegerOnly(s);
    if (!allowed) {
      status_ = MakeError(
          ErrorKind::kGradient, s.loc(),
          absl::StrCat("in kernel '", kernel_.name(),
                       "': the value an atomic operation returns is used "
                       "where gradients depend on it, so the kernel cannot "
                       "be differentiated (its gradient would replay the "
                       "atomic with the final value); use it only as an "
                       "integer index or value of integer stores, or "
                       "compute it in a separate kernel"));
      return;
    }
    from_atomic_.insert(&s);
    if (ir::Isa<ir::LocalStoreStmt>(&s))
      from_atomic_.insert(s.operand(0));  // the local now holds it
  }

  const ir::Kernel& kernel_;
  absl::flat_hash_set<const Stmt*> from_atomic_;
  absl::Status status_;
};

}  // namespace

absl::Status CheckAtomicResults(const ir::Kernel& kernel) {
  return Checker(kernel).Check();
}

}  // namespace quadrants::transforms::autodiff
