#ifndef QUADRANTS_CODEGEN_AMDGPU_CODE_OBJECT_H_
#define QUADRANTS_CODEGEN_AMDGPU_CODE_OBJECT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace quadrants::codegen {

// Checks a code object with LLVM's object reader: it parses as an AMDGPU
// ELF shared object for `gfx_target`, defines a kernel descriptor
// "<entry>.kd" for each of `entries`, and carries an AMDHSA metadata note
// naming each of them. A Compilation error saying what is wrong otherwise.
absl::Status CheckCodeObject(const std::string& bytes,
                             const std::string& gfx_target,
                             const std::vector<std::string>& entries);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_AMDGPU_CODE_OBJECT_H_
