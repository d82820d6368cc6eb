#ifndef QUADRANTS_CODEGEN_LLVM_ADSTACK_SLOTS_H_
#define QUADRANTS_CODEGEN_LLVM_ADSTACK_SLOTS_H_

#include <functional>

#include "absl/container/flat_hash_set.h"
#include "llvm/IR/IRBuilder.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/statements.h"

namespace quadrants::codegen {

// The adstacks whose adjoints the kernel reads or accumulates; their float
// slots hold (primal, adjoint), the others the primal alone.
absl::flat_hash_set<const ir::Stmt*> StacksWithAdjoints(
    const ir::Kernel& kernel);

// Where a push onto a stack of bounded capacity writes, and the stack's
// count after it.
struct PushTarget {
  llvm::Value* index;
  llvm::Value* next;
};

// The target of a checked push. `count` and `capacity` are i64 or vectors
// of i64 alike, `fits` says where count < capacity, and `any_full` (i1) is
// whether an active count has none. Then `report_overflow` runs, and a full
// stack overwrites its last slot and keeps its count at the capacity rather
// than writing past its slice of the heap.
PushTarget EmitCheckedPushTarget(llvm::IRBuilder<>& b, llvm::Value* count,
                                 llvm::Value* capacity, llvm::Value* fits,
                                 llvm::Value* any_full,
                                 const std::function<void()>& report_overflow);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_ADSTACK_SLOTS_H_
