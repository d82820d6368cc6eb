#include "quadrants/runtime/amdgpu/codegen_only.h"

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/amdgpu/code_object.h"
#include "quadrants/codegen/amdgpu/hsaco_compiler.h"
#include "quadrants/codegen/llvm/compiler_identity.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/options.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/amdgpu/amdgpu_codegen.h"

namespace quadrants::amdgpu {
namespace {

// Process-wide counts, in target order of first use.
struct Counts {
  std::mutex mutex;
  std::vector<CodegenOnlyCount> targets;

  void Add(const std::string& target, bool ok) {
    std::lock_guard<std::mutex> lock(mutex);
    for (CodegenOnlyCount& count : targets) {
      if (count.target == target) {
        ++(ok ? count.compiled : count.failed);
        return;
      }
    }
    targets.push_back({target, ok ? 1 : 0, ok ? 0 : 1});
  }
};

Counts& GlobalCounts() {
  static Counts* counts = new Counts();
  return *counts;
}

absl::StatusOr<CompiledKernelData> CompileChecked(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes,
    const CompileConfig& config, const CodegenOnlyCompiler::Target& target,
    const offline_cache::OfflineCache* cache, OfflineCacheStats* cache_stats) {
  codegen::GpuCompiler& compiler = *target.compiler;
  const std::string key =
      cache ? gpu::GpuCacheKey(*cache, offloaded, snodes, config, compiler,
                               target.cache_target)
            : "";
  OfflineCacheStats unused;
  auto check = [&](const CompiledKernelData& artifact) -> absl::StatusOr<bool> {
    QD_RETURN_IF_ERROR(codegen::CheckCodeObject(
        artifact.binary, compiler.cpu(),
        codegen::GpuCompiler::EntryNames(artifact.tasks)));
    return true;
  };
  QD_ASSIGN_OR_RETURN(auto generated,
                      offline_cache::LoadOrGenerate<bool>(
                          cache, key, cache_stats ? cache_stats : &unused,
                          [&] {
                            return gpu::GenerateGpuKernel(offloaded, snodes,
                                                          config, compiler);
                          },
                          check));
  return std::move(generated.first);
}

// A kernel the codegen-only backend compiled: launching it does nothing.
class CodegenOnlyKernel : public CompiledKernel {
 public:
  explicit CodegenOnlyKernel(const CompiledKernelData& artifact)
      : CompiledKernel(artifact) {}
};

class CodegenOnlyBackend : public Backend {
 public:
  absl::Status UpdateConfig(const CompileConfig& config) override {
    config_ = config;
    return absl::OkStatus();
  }
  CodegenOnlyBackend(const CompileConfig& config,
                     std::unique_ptr<CodegenOnlyCompiler> compiler)
      : config_(config),
        compiler_(std::move(compiler)),
        cache_(offline_cache::OpenOfflineCache(
            config, codegen::LlvmCompilerIdentity(), &cache_stats_)) {}

  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override {
    QD_ASSIGN_OR_RETURN(
        auto artifacts,
        compiler_->Compile(offloaded, snodes, config_,
                           cache_ ? &*cache_ : nullptr, &cache_stats_));
    return std::make_shared<CodegenOnlyKernel>(artifacts.front());
  }
  void SetRoot(char*) override {}
  absl::StatusOr<BackendLaunchStats> Launch(const CompiledKernel& kernel,
                                            absl::Span<const ResolvedArgument>,
                                            absl::Span<const uint64_t>,
                                            const LaunchOptions&) override {
    BackendLaunchStats stats;
    stats.tasks = kernel.num_tasks();
    return stats;
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::optional<RuntimeErrorRecord> TakeError() override {
    return absl::nullopt;
  }
  std::shared_ptr<ArrayMemory> memory() override { return memory_; }
  int num_threads() const override { return 1; }
  const AdStackStats& adstack_stats() const override { return adstack_stats_; }
  const OfflineCacheStats& offline_cache_stats() const override {
    return cache_stats_;
  }

 private:
  CompileConfig config_;
  std::unique_ptr<CodegenOnlyCompiler> compiler_;
  std::shared_ptr<ArrayMemory> memory_ =
      std::make_shared<HostMemoryAllocator>();
  AdStackStats adstack_stats_;
  OfflineCacheStats cache_stats_;  // before cache_, which notes its directory
  std::optional<offline_cache::OfflineCache> cache_;
};

// Forwards to the backend that runs the kernels, and compiles each kernel
// it compiles for the codegen-only targets too.
class CheckingBackend : public ForwardingBackend {
 public:
  CheckingBackend(const CompileConfig& config, std::unique_ptr<Backend> inner,
                  std::unique_ptr<CodegenOnlyCompiler> compiler)
      : ForwardingBackend(std::move(inner)),
        config_(config),
        compiler_(std::move(compiler)) {}

  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override {
    QD_ASSIGN_OR_RETURN(auto compiled, inner().Compile(offloaded, snodes));
    // No cache: every kernel the suite builds is compiled and counted.
    QD_RETURN_IF_ERROR(
        compiler_->Compile(offloaded, snodes, config_, nullptr, nullptr)
            .status());
    return compiled;
  }

 private:
  CompileConfig config_;
  std::unique_ptr<CodegenOnlyCompiler> compiler_;
};

}  // namespace

std::vector<std::string> CodegenOnlyTargets() {
  return options::EnvList(options::Option::kAmdgpuCodegenOnly);
}

std::vector<CodegenOnlyCount> CodegenOnlyCounts() {
  Counts& counts = GlobalCounts();
  std::lock_guard<std::mutex> lock(counts.mutex);
  return counts.targets;
}

absl::StatusOr<std::unique_ptr<CodegenOnlyCompiler>>
CodegenOnlyCompiler::Create(const std::vector<std::string>& targets) {
  std::vector<Target> compiled_targets;
  for (const std::string& target : targets) {
    absl::StatusOr<std::unique_ptr<codegen::GpuCompiler>> compiler =
        codegen::CreateHsacoCompiler(target);
    if (!compiler.ok()) {
      return MakeError(GetErrorKind(compiler.status()),
                       absl::StrCat("QD_AMDGPU_CODEGEN_ONLY=", target, ": ",
                                    compiler.status().message()));
    }
    gpu::GpuCacheTarget cache_target = HsacoCacheTarget(**compiler);
    compiled_targets.push_back({*std::move(compiler), std::move(cache_target)});
  }
  return std::make_unique<CodegenOnlyCompiler>(std::move(compiled_targets));
}

absl::StatusOr<std::vector<CompiledKernelData>> CodegenOnlyCompiler::Compile(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes,
    const CompileConfig& config, const offline_cache::OfflineCache* cache,
    OfflineCacheStats* cache_stats) {
  std::vector<CompiledKernelData> artifacts;
  for (const Target& target : targets_) {
    const std::string& gfx_target = target.compiler->cpu();
    absl::StatusOr<CompiledKernelData> artifact =
        CompileChecked(offloaded, snodes, config, target, cache, cache_stats);
    GlobalCounts().Add(gfx_target, artifact.ok());
    if (!artifact.ok()) {
      return MakeError(ErrorKind::kCompilation,
                       absl::StrCat("kernel '", offloaded.name(),
                                    "': AMDGPU code object for ", gfx_target,
                                    " (QD_AMDGPU_CODEGEN_ONLY): ",
                                    artifact.status().message()));
    }
    artifacts.push_back(*std::move(artifact));
  }
  return artifacts;
}

absl::StatusOr<std::unique_ptr<Backend>> WithCodegenOnlyCheck(
    const CompileConfig& config, std::unique_ptr<Backend> backend) {
  const std::vector<std::string> targets = CodegenOnlyTargets();
  if (targets.empty() || config.arch == Arch::kAmdgpu)
    return backend;
  QD_ASSIGN_OR_RETURN(auto compiler, CodegenOnlyCompiler::Create(targets));
  return std::unique_ptr<Backend>(std::make_unique<CheckingBackend>(
      config, std::move(backend), std::move(compiler)));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCodegenOnlyBackend(
    const CompileConfig& config, const std::vector<std::string>& targets) {
  QD_ASSIGN_OR_RETURN(auto compiler, CodegenOnlyCompiler::Create(targets));
  return std::unique_ptr<Backend>(
      std::make_unique<CodegenOnlyBackend>(config, std::move(compiler)));
}

}  // namespace quadrants::amdgpu
