#include "quadrants/runtime/amdgpu/amdgpu_codegen.h"

#include "absl/strings/str_cat.h"

namespace quadrants::amdgpu {

gpu::GpuCacheTarget HsacoCacheTarget(const codegen::GpuCompiler& compiler) {
  return {
      absl::StrCat(" runtime=", gpu::BitcodeHash(compiler.runtime_bitcode()),
                   " ocml=", gpu::BitcodeHash(compiler.device_library())),
      absl::StrCat("amdgpu ", compiler.target_description())};
}

}  // namespace quadrants::amdgpu
