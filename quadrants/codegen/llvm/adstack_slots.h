#ifndef QUADRANTS_CODEGEN_LLVM_ADSTACK_SLOTS_H_
#define QUADRANTS_CODEGEN_LLVM_ADSTACK_SLOTS_H_

#include "absl/container/flat_hash_set.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/statements.h"

namespace quadrants::codegen {

// The adstacks whose adjoints the kernel reads or accumulates; their float
// slots hold (primal, adjoint), the others the primal alone.
absl::flat_hash_set<const ir::Stmt*> StacksWithAdjoints(
    const ir::Kernel& kernel);

// What the host needs to size and place one stack.
AdStackSpec DescribeAdStack(const ir::AdStackAllocaStmt& s, bool adjoint);

// Bytes of one element in a stack slot (u1 takes a byte).
int64_t AdStackElementBytes(ir::PrimitiveType t);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_ADSTACK_SLOTS_H_
