#include "quadrants/runtime/adstack/launch_sizer.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/runtime/adstack/size_expr_evaluator.h"

namespace quadrants::adstack {
namespace {

template <typename List>
void AddOnce(List& list, int value) {
  if (std::find(list.begin(), list.end(), value) == list.end())
    list.push_back(value);
}

// Launch-time values for size expressions, read through host pointers.
class HostSizerInputs : public SizeExprInputs {
 public:
  HostSizerInputs(const ir::SNodeTree& snodes, const char* root,
                  const QdLaunchContext& ctx,
                  const std::vector<ir::KernelParam>& params)
      : snodes_(snodes), root_(root), ctx_(ctx), params_(params) {}

  absl::optional<int64_t> FieldValue(
      int snode, absl::Span<const int64_t> index) const override {
    auto it = layouts_.find(snode);
    if (it == layouts_.end()) {
      auto layout = snodes_.Layout(snode);
      if (!layout.ok())
        return absl::nullopt;
      it = layouts_.emplace(snode, *layout).first;
    }
    const ir::PlaceLayout& layout = it->second;
    if (index.size() != layout.shape.size())
      return absl::nullopt;
    int64_t offset = layout.offset;
    for (size_t a = 0; a < index.size(); ++a) {
      if (index[a] < 0 || index[a] >= layout.shape[a])
        return absl::nullopt;
      offset += index[a] * layout.axis_stride[a];
    }
    return ReadAsInteger(root_ + offset, snodes_.node(snode).dtype);
  }

  int64_t NdarrayShape(int arg, int axis) const override {
    return ctx_.ndarray_shape[arg][axis];
  }

  absl::optional<int64_t> NdarrayValue(
      int arg, absl::Span<const int64_t> index) const override {
    const ir::KernelParam& p = params_[arg];
    if (static_cast<int>(index.size()) != p.ndim)
      return absl::nullopt;
    int64_t linear = 0;
    for (int a = 0; a < p.ndim; ++a) {
      const int64_t extent = ctx_.ndarray_shape[arg][a];
      if (index[a] < 0 || index[a] >= extent)
        return absl::nullopt;
      linear = linear * extent + index[a];
    }
    const int64_t bytes = std::max(1, ir::BitWidth(p.dtype) / 8);
    return ReadAsInteger(
        static_cast<const char*>(ctx_.ndarray_data[arg]) + linear * bytes,
        p.dtype);
  }

  int64_t ArgValue(int arg) const override { return ctx_.args[arg]; }

 private:
  const ir::SNodeTree& snodes_;
  const char* root_;
  const QdLaunchContext& ctx_;
  const std::vector<ir::KernelParam>& params_;
  mutable absl::flat_hash_map<int, ir::PlaceLayout> layouts_;
};

}  // namespace

LaunchSizer::LaunchSizer(const std::vector<std::vector<AdStackInfo>>& tasks)
    : dependencies_(tasks.size()), caches_(tasks.size()) {
  for (size_t t = 0; t < tasks.size(); ++t) {
    Dependencies& deps = dependencies_[t];
    for (const AdStackInfo& stack : tasks[t]) {
      if (!stack.size_expr)
        continue;
      std::vector<const ir::SizeExpr*> pending = {stack.size_expr.get()};
      while (!pending.empty()) {
        const ir::SizeExpr* e = pending.back();
        pending.pop_back();
        switch (e->kind()) {
          case ir::SizeExprKind::kArgValue:
            AddOnce(deps.args, e->arg());
            break;
          case ir::SizeExprKind::kNdarrayShape:
            AddOnce(deps.shape_args, e->arg());
            break;
          case ir::SizeExprKind::kNdarrayRead:
            AddOnce(deps.shape_args, e->arg());
            AddOnce(deps.data_args, e->arg());
            break;
          case ir::SizeExprKind::kFieldLoad:
            AddOnce(deps.fields, e->snode_id());
            break;
          default:
            break;
        }
        for (const auto& child : e->children())
          pending.push_back(child.get());
      }
    }
  }
}

absl::StatusOr<AdStackLayout> LaunchSizer::Size(
    const CompileConfig& config, const CompiledKernel& kernel, int task,
    const ir::SNodeTree& snodes, const char* root, const QdLaunchContext& ctx,
    absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations, AdStackStats* stats,
    const Evaluator* evaluate) {
  const std::vector<AdStackInfo>& stacks = kernel.task_adstacks()[task];
  const Dependencies& deps = dependencies_[task];
  Cache& cache = caches_[task];
  std::vector<int64_t> signature;
  bool cacheable = true;
  for (int arg : deps.args)
    signature.push_back(ctx.args[arg]);
  for (int arg : deps.shape_args) {
    for (int64_t extent : args[arg].shape)
      signature.push_back(extent);
  }
  for (int arg : deps.data_args) {
    signature.push_back(reinterpret_cast<int64_t>(args[arg].data));
    signature.push_back(static_cast<int64_t>(args[arg].data_generation));
    cacheable &= args[arg].data_generation != 0;
  }
  for (int field : deps.fields) {
    signature.push_back(field < static_cast<int>(field_generations.size())
                            ? static_cast<int64_t>(field_generations[field])
                            : -1);
  }
  const bool forced = config.ad_stack_size > 0;
  const bool evaluated =
      !forced && (deps.any() || std::any_of(stacks.begin(), stacks.end(),
                                            [](const AdStackInfo& s) {
                                              return s.size_expr;
                                            }));
  AdStackLayout layout;
  if (evaluated && cacheable && cache.valid && cache.signature == signature) {
    layout.capacities = cache.capacities;
    ++stats->cache_hits;
  } else {
    absl::optional<std::vector<int64_t>> elsewhere;
    if (evaluated && evaluate != nullptr) {
      absl::StatusOr<absl::optional<std::vector<int64_t>>> result =
          (*evaluate)();
      if (!result.ok())
        return result.status();
      elsewhere = std::move(*result);
    }
    if (elsewhere) {
      layout.capacities = std::move(*elsewhere);
    } else {
      absl::StatusOr<std::vector<int64_t>> capacities =
          Evaluate(config, kernel, task, snodes, root, ctx, stats);
      if (!capacities.ok())
        return capacities.status();
      layout.capacities = std::move(*capacities);
    }
    if (evaluated) {
      cache.valid = cacheable;
      cache.signature = std::move(signature);
      cache.capacities = layout.capacities;
    }
  }
  for (size_t k = 0; k < stacks.size(); ++k) {
    layout.offsets.push_back(layout.stride);
    // An i64 count, then the slots; every stack starts 8-byte aligned.
    layout.stride +=
        (8 + layout.capacities[k] * stacks[k].slot_bytes + 7) / 8 * 8;
  }
  return layout;
}

absl::StatusOr<std::vector<int64_t>> LaunchSizer::Evaluate(
    const CompileConfig& config, const CompiledKernel& kernel, int task,
    const ir::SNodeTree& snodes, const char* root, const QdLaunchContext& ctx,
    AdStackStats* stats) const {
  const bool forced = config.ad_stack_size > 0;
  HostSizerInputs inputs(snodes, root, ctx, kernel.params());
  std::vector<int64_t> capacities;
  for (const AdStackInfo& stack : kernel.task_adstacks()[task]) {
    int64_t capacity = config.default_ad_stack_size;
    if (forced) {
      capacity = config.ad_stack_size;
    } else if (stack.static_capacity > 0) {
      capacity = stack.static_capacity;
    } else if (stack.size_expr) {
      absl::StatusOr<int64_t> value =
          EvaluateSizeExpr(*stack.size_expr, inputs);
      ++stats->tree_evaluations;
      if (!value.ok()) {
        return MakeError(
            ErrorKind::kRuntime,
            absl::StrCat("kernel '", kernel.name(),
                         "': sizing the adstack of the loop at ",
                         stack.loc.ToString(), ": ", value.status().message()));
      }
      capacity = std::max<int64_t>(*value, 2);  // the two setup slots
    }
    capacities.push_back(capacity);
  }
  return capacities;
}

void RecordLayout(const AdStackLayout& layout, int task, int num_tasks,
                  int64_t threads, AdStackStats* stats) {
  if (static_cast<int>(stats->capacities.size()) < num_tasks) {
    stats->capacities.resize(num_tasks);
    stats->per_thread_stride.resize(num_tasks);
  }
  stats->capacities[task] = layout.capacities;
  stats->per_thread_stride[task] = layout.stride;
  stats->bytes_needed = std::max(stats->bytes_needed, layout.stride * threads);
}

}  // namespace quadrants::adstack
