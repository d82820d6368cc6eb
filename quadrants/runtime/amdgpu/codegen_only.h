#ifndef QUADRANTS_RUNTIME_AMDGPU_CODEGEN_ONLY_H_
#define QUADRANTS_RUNTIME_AMDGPU_CODEGEN_ONLY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/runtime/gpu/gpu_codegen.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::amdgpu {

// Codegen-only mode, for machines without an AMD GPU: the environment
// variable QD_AMDGPU_CODEGEN_ONLY names gfx targets (comma-separated, e.g.
// "gfx90a,gfx942,gfx1100"). Then qd.init(arch=qd.amdgpu) compiles every
// kernel to a checked code object per target and skips launches, and every
// other arch also compiles each kernel it builds for those targets on the
// side, so a suite run on the CPU checks AMDGPU code generation for all of
// its kernels while still checking their results.

// The targets QD_AMDGPU_CODEGEN_ONLY names; empty when it is unset or empty.
std::vector<std::string> CodegenOnlyTargets();

// What codegen-only compiles did in this process, per target.
struct CodegenOnlyCount {
  std::string target;
  int64_t compiled = 0;  // code objects built and checked
  int64_t failed = 0;    // kernels that did not compile or check
};
std::vector<CodegenOnlyCount> CodegenOnlyCounts();

// Compiles kernels to code objects for several targets and checks each
// with LLVM's object reader (codegen::CheckCodeObject), counting both.
class CodegenOnlyCompiler {
 public:
  static absl::StatusOr<std::unique_ptr<CodegenOnlyCompiler>> Create(
      const std::vector<std::string>& targets);

  // The artifacts (one per target, in order) of `offloaded`, from `cache`
  // when it holds a code object that checks; the first failure as a
  // Compilation error naming the kernel and the target.
  absl::StatusOr<std::vector<CompiledKernelData>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes,
      const CompileConfig& config, const offline_cache::OfflineCache* cache,
      OfflineCacheStats* cache_stats);

  // One target's compiler and what keys its code objects.
  struct Target {
    std::unique_ptr<codegen::GpuCompiler> compiler;
    gpu::GpuCacheTarget cache_target;
  };
  explicit CodegenOnlyCompiler(std::vector<Target> targets)
      : targets_(std::move(targets)) {}

 private:
  std::vector<Target> targets_;
};

// `backend` (of any arch but amdgpu), also compiling each kernel for the
// codegen-only targets when QD_AMDGPU_CODEGEN_ONLY names any; else
// `backend` itself.
absl::StatusOr<std::unique_ptr<Backend>> WithCodegenOnlyCheck(
    const CompileConfig& config, std::unique_ptr<Backend> backend);

// The amdgpu backend in codegen-only mode: compiles and checks, launches
// nothing (kernels leave fields and arrays unchanged).
absl::StatusOr<std::unique_ptr<Backend>> CreateCodegenOnlyBackend(
    const CompileConfig& config, const std::vector<std::string>& targets);

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_CODEGEN_ONLY_H_
