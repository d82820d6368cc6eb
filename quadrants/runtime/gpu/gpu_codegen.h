#ifndef QUADRANTS_RUNTIME_GPU_GPU_CODEGEN_H_
#define QUADRANTS_RUNTIME_GPU_GPU_CODEGEN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "quadrants/artifact/compiled_kernel_data.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

// How the GPU backends (and AMDGPU's codegen-only mode, which has no
// driver) turn an offloaded kernel into a binary, and key it in the offline
// cache.
namespace quadrants::gpu {

// What keys a GPU target's binaries besides the IR and the lowering options.
struct GpuCacheTarget {
  // Appended to the options: hashes of the bitcode linked into kernels.
  std::string linked;
  // The device the binary is for, e.g. "cuda sm_90 +ptx85 driver 12040".
  std::string device;
};

// How kernels are lowered under `config` for `compiler`'s target.
codegen::LoweringOptions GpuLoweringOptions(
    const CompileConfig& config, const codegen::GpuCompiler& compiler);

// Lowers and compiles `offloaded`; the artifact's binary is what the
// driver loads.
absl::StatusOr<CompiledKernelData> GenerateGpuKernel(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes,
    const CompileConfig& config, codegen::GpuCompiler& compiler);

std::string GpuCacheKey(const offline_cache::OfflineCache& cache,
                        const ir::Kernel& offloaded,
                        const ir::SNodeTree& snodes,
                        const CompileConfig& config,
                        const codegen::GpuCompiler& compiler,
                        const GpuCacheTarget& target);

// A hash of linked bitcode, for GpuCacheTarget::linked.
uint64_t BitcodeHash(absl::Span<const unsigned char> bitcode);

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_GPU_CODEGEN_H_
