#ifndef QUADRANTS_CODEGEN_LLVM_OPTIMIZE_H_
#define QUADRANTS_CODEGEN_LLVM_OPTIMIZE_H_

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace quadrants::codegen {

// Runs the new pass manager's O3 pipeline for `machine`'s target.
// `vectorize` false leaves LLVM's loop and SLP vectorizers out, so the code
// stays scalar.
void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine,
                    bool vectorize = true);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_OPTIMIZE_H_
