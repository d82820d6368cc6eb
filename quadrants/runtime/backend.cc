#include "quadrants/runtime/backend.h"

#include <algorithm>

#include "quadrants/ir/walk.h"

namespace quadrants {
namespace {

void AddOnce(int value, std::vector<int>* values) {
  if (std::find(values->begin(), values->end(), value) == values->end())
    values->push_back(value);
}

}  // namespace

CompiledKernel::CompiledKernel(const ir::Kernel& kernel,
                               CompiledKernelData artifact)
    : name_(kernel.name()),
      params_(kernel.params()),
      artifact_(std::move(artifact)),
      task_adstacks_(artifact_.TaskAdStacks()) {
  ir::WalkKernel(kernel, [&](const ir::Stmt* s) {
    draws_random_ = draws_random_ || ir::Isa<ir::RandomStmt>(s);
    if (!ir::Isa<ir::GlobalStoreStmt>(s) && !ir::Isa<ir::AtomicOpStmt>(s))
      return;
    const ir::Stmt* ptr = s->operand(0);
    if (const auto* field = ir::DynCast<ir::FieldPtrStmt>(ptr))
      AddOnce(field->snode_id(), &written_snodes_);
    else if (const auto* array = ir::DynCast<ir::NdarrayPtrStmt>(ptr))
      AddOnce(array->arg(), &written_args_);
  });
  for (const auto& stmt : *kernel.body()) {
    adstack_gates_.emplace_back();
    const auto* task = ir::DynCast<ir::OffloadedTaskStmt>(stmt.get());
    for (size_t k = 0; task != nullptr && k < task->body()->size(); ++k) {
      if (const auto* row =
              ir::DynCast<ir::AdStackRowStmt>(task->body()->at(k)))
        adstack_gates_.back() = row->gate();
    }
  }
}

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
