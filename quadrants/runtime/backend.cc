#include "quadrants/runtime/backend.h"

namespace quadrants {

CompiledKernel::CompiledKernel(CompiledKernelData artifact)
    : artifact_(std::move(artifact)),
      task_adstacks_(artifact_.TaskAdStacks()) {}

absl::StatusOr<const CompiledKernel*> CompiledKernel::CheckpointedVariant()
    const {
  if (checkpointed_ == nullptr) {
    if (build_checkpointed_ == nullptr)
      return this;
    absl::StatusOr<std::shared_ptr<CompiledKernel>> built =
        build_checkpointed_();
    if (!built.ok())
      return built.status();
    checkpointed_ = *std::move(built);
  }
  return checkpointed_.get();
}

absl::StatusOr<BackendLaunchStats> Backend::LaunchCheckpointedVariant(
    const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations,
    const LaunchOptions& options) {
  absl::StatusOr<const CompiledKernel*> variant = kernel.CheckpointedVariant();
  if (!variant.ok())
    return variant.status();
  absl::StatusOr<BackendLaunchStats> stats =
      Launch(**variant, args, field_generations, options);
  if (stats.ok())
    stats->ran = *variant;
  return stats;
}

}  // namespace quadrants
