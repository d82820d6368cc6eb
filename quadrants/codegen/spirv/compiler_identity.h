#ifndef QUADRANTS_CODEGEN_SPIRV_COMPILER_IDENTITY_H_
#define QUADRANTS_CODEGEN_SPIRV_COMPILER_IDENTITY_H_

#include <string>

namespace quadrants::codegen::spirv {

// The files holding the SPIR-V generator and SPIRV-Tools' optimizer; empty
// when a file cannot be read. It keys the Vulkan offline cache.
const std::string& CompilerIdentity();

}  // namespace quadrants::codegen::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_COMPILER_IDENTITY_H_
