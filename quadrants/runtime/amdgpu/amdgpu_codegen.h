#ifndef QUADRANTS_RUNTIME_AMDGPU_AMDGPU_CODEGEN_H_
#define QUADRANTS_RUNTIME_AMDGPU_AMDGPU_CODEGEN_H_

#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/runtime/gpu/gpu_codegen.h"

namespace quadrants::amdgpu {

// What keys the code objects `compiler` makes in the offline cache, shared
// by the AMDGPU backend and codegen-only mode: the gfx target and the
// linked runtime module and ocml, not the driver.
gpu::GpuCacheTarget HsacoCacheTarget(const codegen::GpuCompiler& compiler);

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_AMDGPU_CODEGEN_H_
