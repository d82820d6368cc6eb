#ifndef QUADRANTS_RUNTIME_AMDGPU_AMDGPU_CODEGEN_H_
#define QUADRANTS_RUNTIME_AMDGPU_AMDGPU_CODEGEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/codegen/amdgpu/hsaco_compiler.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::amdgpu {

// How the AMDGPU backend lowers kernels under `config` for `compiler`.
codegen::LoweringOptions AmdgpuLoweringOptions(
    const CompileConfig& config, const codegen::HsacoCompiler& compiler);

// Lowers and compiles an offloaded kernel; the artifact's object is the
// code object.
absl::StatusOr<offline_cache::KernelArtifact> GenerateHsaco(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes,
    const CompileConfig& config, codegen::HsacoCompiler& compiler);

// The kernel entries an artifact's code object must define.
std::vector<std::string> HsacoEntries(
    const offline_cache::KernelArtifact& artifact);

// The offline cache key of a kernel's code object for `compiler`'s target.
std::string HsacoCacheKey(const ir::Kernel& offloaded,
                          const ir::SNodeTree& snodes,
                          const CompileConfig& config,
                          const codegen::HsacoCompiler& compiler);

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_AMDGPU_CODEGEN_H_
