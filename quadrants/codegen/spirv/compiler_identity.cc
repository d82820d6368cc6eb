#include "quadrants/codegen/spirv/compiler_identity.h"

#include "quadrants/codegen/spirv/kernel_codegen.h"
#include "quadrants/codegen/spirv/spirv_tools.h"
#include "quadrants/common/binary_identity.h"

namespace quadrants::codegen::spirv {

const std::string& CompilerIdentity() {
  static const std::string identity = quadrants::CompilerIdentity(
      "spirv", &GenerateSpirv, &OptimizeModule, &CompilerIdentity);
  return identity;
}

}  // namespace quadrants::codegen::spirv
