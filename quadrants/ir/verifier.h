#ifndef QUADRANTS_IR_VERIFIER_H_
#define QUADRANTS_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"

namespace quadrants::ir {

struct VerifyOptions {
  // After type checking every value has a type and operand types agree;
  // before it, expression types may still be unknown.
  bool require_types = true;
  // Checks field accesses against the tree when given.
  const SNodeTree* snodes = nullptr;
};

// Checks structural invariants: operands defined before use (in the same
// block or an enclosing one), operand kinds and types, parent links, loop
// indices inside their loop, break/continue inside a loop, offloaded tasks
// only at the kernel root. The error names the kernel, the statement and its
// source location.
absl::Status Verify(const Kernel& kernel, const VerifyOptions& options = {});

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_VERIFIER_H_
