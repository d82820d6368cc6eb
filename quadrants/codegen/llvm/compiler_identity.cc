#include "quadrants/codegen/llvm/compiler_identity.h"

#include "absl/strings/str_cat.h"
#include "llvm/Config/llvm-config.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/codegen/llvm/optimize.h"
#include "quadrants/common/binary_identity.h"

namespace quadrants::codegen {

const std::string& LlvmCompilerIdentity() {
  static const std::string identity =
      CompilerIdentity(absl::StrCat("llvm ", LLVM_VERSION_STRING), &LowerKernel,
                       &OptimizeModule, &LlvmCompilerIdentity);
  return identity;
}

}  // namespace quadrants::codegen
