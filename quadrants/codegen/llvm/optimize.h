#ifndef QUADRANTS_CODEGEN_LLVM_OPTIMIZE_H_
#define QUADRANTS_CODEGEN_LLVM_OPTIMIZE_H_

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace quadrants::codegen {

// Which of LLVM's vectorizers the pipeline runs.
struct Vectorizers {
  bool loop = true;  // the loop vectorizer
  bool slp = true;   // the SLP (straight-line) vectorizer
};

// Runs the new pass manager's O3 pipeline for `machine`'s target, with
// `vectorizers` (none: the code stays scalar).
void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine,
                    Vectorizers vectorizers = {});

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_OPTIMIZE_H_
