#include "quadrants/codegen/llvm/alias_scopes.h"

#include "llvm/IR/MDBuilder.h"

namespace quadrants::codegen {

AliasScopes::AliasScopes(llvm::LLVMContext& context) {
  llvm::MDBuilder md(context);
  // Named nodes are uniqued: every emitter of a module shares them.
  llvm::MDNode* domain = md.createAliasScopeDomain("quadrants");
  adstack_ = llvm::MDNode::get(
      context, {md.createAliasScope("quadrants.adstack", domain)});
  data_ = llvm::MDNode::get(
      context, {md.createAliasScope("quadrants.data", domain)});
}

void AliasScopes::MarkAdStack(llvm::Instruction* access) const {
  access->setMetadata(llvm::LLVMContext::MD_alias_scope, adstack_);
  access->setMetadata(llvm::LLVMContext::MD_noalias, data_);
}

void AliasScopes::MarkData(llvm::Instruction* access) const {
  access->setMetadata(llvm::LLVMContext::MD_alias_scope, data_);
  access->setMetadata(llvm::LLVMContext::MD_noalias, adstack_);
}

}  // namespace quadrants::codegen
