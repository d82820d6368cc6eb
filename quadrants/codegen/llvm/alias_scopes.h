#ifndef QUADRANTS_CODEGEN_LLVM_ALIAS_SCOPES_H_
#define QUADRANTS_CODEGEN_LLVM_ALIAS_SCOPES_H_

#include "llvm/IR/Instruction.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"

namespace quadrants::codegen {

// The memory a kernel touches, as LLVM's scoped alias analysis sees it: the
// adstack heap and the data of fields and ndarrays are separate
// allocations, so a push never changes a field element and a loop's field
// loads stay hoistable past its pushes. Accesses left untagged (the
// runtime's, the launch context's) may alias anything.
class AliasScopes {
 public:
  explicit AliasScopes(llvm::LLVMContext& context);

  // Tags `access` (a load, store, atomic or masked memory intrinsic).
  void MarkAdStack(llvm::Instruction* access) const;
  void MarkData(llvm::Instruction* access) const;

 private:
  llvm::MDNode* adstack_;  // the scope list {adstack}
  llvm::MDNode* data_;     // the scope list {data}
};

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_ALIAS_SCOPES_H_
