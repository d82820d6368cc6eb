#include "quadrants/runtime/amdgpu/amdgpu_codegen.h"

#include "absl/strings/str_cat.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/xxhash.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/llvm/runtime_module/runtime_amdgcn.h"

namespace quadrants::amdgpu {

codegen::LoweringOptions AmdgpuLoweringOptions(
    const CompileConfig& config, const codegen::HsacoCompiler& compiler) {
  codegen::LoweringOptions options;
  options.check_out_of_bound = config.checks_bounds();
  options.debug = config.debug;
  options.ad_stack_size_forced = config.ad_stack_size > 0;
  // A wavefront pushes in lockstep, as a CUDA warp does.
  options.interleave_adstacks = true;
  // The warp aggregation is written with NVPTX intrinsics.
  options.warp_aggregate_atomics = false;
  options.triple = compiler.triple();
  options.data_layout = compiler.data_layout();
  return options;
}

absl::StatusOr<offline_cache::KernelArtifact> GenerateHsaco(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes,
    const CompileConfig& config, codegen::HsacoCompiler& compiler) {
  llvm::LLVMContext context;
  QD_ASSIGN_OR_RETURN(
      codegen::LoweredKernel lowered,
      codegen::LowerKernel(offloaded, snodes,
                           AmdgpuLoweringOptions(config, compiler), context));
  offline_cache::KernelArtifact artifact;
  QD_ASSIGN_OR_RETURN(artifact.object, compiler.Compile(lowered));
  artifact.tasks = std::move(lowered.tasks);
  artifact.error_sites = std::move(lowered.error_sites);
  artifact.print_sites = std::move(lowered.print_sites);
  return artifact;
}

std::vector<std::string> HsacoEntries(
    const offline_cache::KernelArtifact& artifact) {
  std::vector<std::string> entries;
  for (const codegen::LoweredTask& task : artifact.tasks) {
    entries.push_back(codegen::HsacoCompiler::EntryName(task.function));
    if (!task.bounds_function.empty()) {
      entries.push_back(
          codegen::HsacoCompiler::EntryName(task.bounds_function));
      entries.push_back(
          codegen::HsacoCompiler::DeviceRangeEntryName(task.function));
    }
  }
  return entries;
}

std::string HsacoCacheKey(const ir::Kernel& offloaded,
                          const ir::SNodeTree& snodes,
                          const CompileConfig& config,
                          const codegen::HsacoCompiler& compiler) {
  static const uint64_t runtime_hash =
      llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(kRuntimeBitcodeAmdgcn,
                                                kRuntimeBitcodeAmdgcn_size));
  const std::string& ocml = compiler.device_library();
  const uint64_t ocml_hash = llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t*>(ocml.data()), ocml.size()));
  return offline_cache::CacheKey(
      offloaded, snodes,
      absl::StrCat(AmdgpuLoweringOptions(config, compiler).ToString(),
                   " runtime=", runtime_hash, " ocml=", ocml_hash),
      absl::StrCat("amdgpu ", compiler.target_description()));
}

}  // namespace quadrants::amdgpu
