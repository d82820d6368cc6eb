#ifndef QUADRANTS_CODEGEN_AMDGPU_HSACO_COMPILER_H_
#define QUADRANTS_CODEGEN_AMDGPU_HSACO_COMPILER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"

namespace quadrants::codegen {

// The GPU compiler for one AMD GPU, e.g. "gfx942": HSACO code objects
// (AMDHSA ELF shared objects, as hipModuleLoadData takes them) whose entries
// use the amdgpu_kernel calling convention.
//
// Every target runs in wave64: CDNA (gfx9) has no other mode, and RDNA
// (gfx10+) runs wave64 too, so the launcher's 128-thread blocks are two
// wavefronts everywhere and the device library's wavefront-size switch is
// the same for every target.
//
// Math comes from the ROCm device library ocml.bc ($ROCM_PATH, or the
// usual install paths); its control constants (__oclc_*) are defined from
// the target rather than linked from the per-ISA oclc_*.bc files, so
// targets newer than the installed device library still compile. Linking
// runs ld.lld ($QD_LLD, or LLVM 19's) as a subprocess. Unavailable
// "AMDGPU not available: ..." when LLVM does not know `gfx_target`, or
// ocml.bc or ld.lld is missing.
absl::StatusOr<std::unique_ptr<GpuCompiler>> CreateHsacoCompiler(
    const std::string& gfx_target);

// The ISA version number the device library expects for `gfx_target`
// (major * 1000 + minor * 100 + stepping: gfx90a is 9010, gfx1100 11000),
// or -1 when the name is not gfx<major><minor><stepping>.
int AmdgpuIsaVersion(const std::string& gfx_target);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_AMDGPU_HSACO_COMPILER_H_
