#ifndef QUADRANTS_CODEGEN_AMDGPU_LLD_LINK_H_
#define QUADRANTS_CODEGEN_AMDGPU_LLD_LINK_H_

#include <string>

#include "absl/status/statusor.h"
#include "llvm/ADT/StringRef.h"

namespace quadrants::codegen {

// The path of ld.lld ($QD_LLD, or LLVM 19's); NotFound saying where it
// looked when there is none.
absl::StatusOr<std::string> FindLld();

// Links the relocatable AMDGPU `object` into the shared object (HSACO)
// hipModuleLoadData takes, running `lld` in a temporary directory; a
// Compilation error with the linker's output when it fails.
absl::StatusOr<std::string> LinkCodeObject(const std::string& lld,
                                           llvm::StringRef object);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_AMDGPU_LLD_LINK_H_
