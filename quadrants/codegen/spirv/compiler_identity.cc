#include "quadrants/codegen/spirv/compiler_identity.h"

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/spirv/kernel_codegen.h"
#include "quadrants/codegen/spirv/spirv_tools.h"
#include "quadrants/common/binary_identity.h"

namespace quadrants::codegen::spirv {

const std::string& CompilerIdentity() {
  static const std::string identity = []() -> std::string {
    const void* anchors[] = {
        reinterpret_cast<const void*>(&GenerateSpirv),
        reinterpret_cast<const void*>(&OptimizeModule),
        reinterpret_cast<const void*>(&CompilerIdentity)};
    const std::string files = BinaryIdentity(anchors);
    return files.empty() ? "" : absl::StrCat("spirv ", files);
  }();
  return identity;
}

}  // namespace quadrants::codegen::spirv
