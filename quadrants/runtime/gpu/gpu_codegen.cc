#include "quadrants/runtime/gpu/gpu_codegen.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/xxhash.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {

codegen::LoweringOptions GpuLoweringOptions(
    const CompileConfig& config, const codegen::GpuCompiler& compiler) {
  codegen::LoweringOptions options;
  options.check_out_of_bound = config.checks_bounds();
  options.debug = config.debug;
  options.adstack_size_forced = config.ad_stack_size > 0;
  // A warp (wavefront) pushes in lockstep.
  options.interleave_adstacks = true;
  options.warp_aggregate_atomics = compiler.warp_aggregate_atomics();
  options.simt = compiler.simt().emit ? &compiler.simt() : nullptr;
  options.triple = compiler.triple();
  options.data_layout = compiler.data_layout();
  return options;
}

absl::StatusOr<CompiledKernelData> GenerateGpuKernel(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes,
    const CompileConfig& config, codegen::GpuCompiler& compiler) {
  llvm::LLVMContext context;
  QD_ASSIGN_OR_RETURN(
      codegen::LoweredKernel lowered,
      codegen::LowerKernel(offloaded, snodes,
                           GpuLoweringOptions(config, compiler), context));
  // Compile reads the tasks in `lowered.data`, so they move out after it.
  QD_ASSIGN_OR_RETURN(std::string binary, compiler.Compile(lowered));
  CompiledKernelData artifact = std::move(lowered.data);
  artifact.binary = std::move(binary);
  return artifact;
}

std::string GpuCacheKey(const offline_cache::OfflineCache& cache,
                        const ir::Kernel& offloaded,
                        const ir::SNodeTree& snodes,
                        const CompileConfig& config,
                        const codegen::GpuCompiler& compiler,
                        const GpuCacheTarget& target) {
  return cache.Key(offloaded, snodes,
                   absl::StrCat(GpuLoweringOptions(config, compiler).ToString(),
                                target.linked),
                   target.device);
}

uint64_t BitcodeHash(absl::Span<const unsigned char> bitcode) {
  return llvm::xxh3_64bits(
      llvm::ArrayRef<uint8_t>(bitcode.data(), bitcode.size()));
}

}  // namespace quadrants::gpu
