#ifndef QUADRANTS_CODEGEN_LLVM_COMPILER_IDENTITY_H_
#define QUADRANTS_CODEGEN_LLVM_COMPILER_IDENTITY_H_

#include <string>

namespace quadrants::codegen {

// The LLVM version and the files holding the lowering and the LLVM
// pipeline (one file in a statically linked module, several in a
// dynamically linked test); empty when a file cannot be read. It keys the
// offline cache of every LLVM target.
const std::string& LlvmCompilerIdentity();

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_COMPILER_IDENTITY_H_
