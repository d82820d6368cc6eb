#include "quadrants/runtime/adstack/launch_sizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/adstack/gate_count.h"
#include "quadrants/runtime/adstack/size_expr_evaluator.h"

namespace quadrants::adstack {
namespace {

template <typename List>
void AddOnce(List& list, int value) {
  if (std::find(list.begin(), list.end(), value) == list.end())
    list.push_back(value);
}

// Reads elements of arrays the host may not address through the memory's
// copies, a page at a time, so a serial walk over an array costs one copy
// per page rather than one per element. Pages are clipped to the array
// they belong to, so no copy leaves an allocation.
class PagedReader {
 public:
  explicit PagedReader(ArrayMemory* memory) : memory_(memory) {}

  // The element of `type` at `address`, inside the `array_bytes` bytes
  // from `array`.
  absl::optional<int64_t> Read(const char* array, int64_t array_bytes,
                               const char* address, ir::PrimitiveType type) {
    if (memory_ == nullptr || memory_->host_addressable())
      return ReadAsInteger(address, type);
    const int64_t offset = address - array;
    const int64_t page = offset / kPageBytes;
    const auto key = std::make_pair(array, page);
    auto it = pages_.find(key);
    if (it == pages_.end()) {
      const int64_t begin = page * kPageBytes;
      const int64_t bytes = std::min(kPageBytes, array_bytes - begin);
      std::vector<char> copy(static_cast<size_t>(std::max<int64_t>(bytes, 0)));
      absl::Status status =
          memory_->CopyToHost(copy.data(), array + begin, bytes);
      if (!status.ok()) {
        if (error_.ok())
          error_ = status;
        return absl::nullopt;
      }
      it = pages_.emplace(key, std::move(copy)).first;
    }
    return ReadAsInteger(it->second.data() + (offset - page * kPageBytes),
                         type);
  }

  // The first copy that failed, if any.
  const absl::Status& error() const { return error_; }

 private:
  static constexpr int64_t kPageBytes = int64_t{1} << 16;
  ArrayMemory* memory_;
  absl::flat_hash_map<std::pair<const char*, int64_t>, std::vector<char>>
      pages_;
  absl::Status error_;
};

// Launch-time values for size expressions: fields in the root buffer and
// ndarrays at the context's data pointers, read in place or through
// `memory`'s copies.
class HostSizerInputs : public SizeExprInputs {
 public:
  HostSizerInputs(const ir::SNodeTree& snodes, const char* root,
                  const QdLaunchContext& ctx,
                  const std::vector<ir::KernelParam>& params,
                  ArrayMemory* memory)
      : snodes_(snodes),
        root_(root),
        ctx_(ctx),
        params_(params),
        reader_(memory) {}

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
    for (size_t a = 0; a < index.size(); ++a) {
      if (index[a] < 0 || index[a] >= layout.shape[a])
        return absl::nullopt;
    }
    int64_t offset = layout.ByteOffset({index.begin(), index.end()});
    if (layout.pool_node >= 0) {
      // Under a pointer or dynamic level: the block its table names (0, a
      // block of zeros, for an inactive cell).
      absl::optional<int64_t> block = PoolBlock(snode, layout, index);
      if (!block)
        return absl::nullopt;
      offset += layout.pool_offset + *block * layout.block_bytes;
    }
    return reader_.Read(root_, snodes_.root_bytes(), root_ + offset,
                        snodes_.node(snode).dtype);
  }

  absl::optional<int64_t> PoolBlock(int place, const ir::PlaceLayout& layout,
                                    absl::Span<const int64_t> index) const {
    const ir::SNode& level = snodes_.node(layout.pool_node);
    const std::vector<int64_t> own = snodes_.Extents(place);
    const std::vector<int64_t> cells = snodes_.Extents(layout.pool_node);
    std::vector<int64_t> cell(cells.size(), 0);
    for (size_t a = 0; a < cells.size() && a < index.size(); ++a)
      cell[a] = index[a] / (own[a] / cells[a]);
    if (level.kind == ir::SNode::Kind::kDynamic)
      cell[level.axes[0]] /= level.chunk_size;
    absl::optional<int64_t> block = FieldValue(level.table, cell);
    if (block && (*block < 0 || *block >= level.pool_blocks))
      return absl::nullopt;
    return block;
  }

  int64_t NdarrayShape(int arg, int axis) const override {
    return ctx_.ndarray_shape[arg][axis];
  }

  absl::optional<int64_t> NdarrayValue(
      int arg, absl::Span<const int64_t> index) const override {
    const ir::KernelParam& p = params_[arg];
    if (static_cast<int>(index.size()) != p.ndim)
      return absl::nullopt;
    int64_t linear = 0, count = 1;
    for (int a = 0; a < p.ndim; ++a) {
      const int64_t extent = ctx_.ndarray_shape[arg][a];
      if (index[a] < 0 || index[a] >= extent)
        return absl::nullopt;
      linear = linear * extent + index[a];
      count *= extent;
    }
    const int64_t bytes = std::max(1, ir::BitWidth(p.dtype) / 8);
    const char* data = static_cast<const char*>(ctx_.ndarray_data[arg]);
    return reader_.Read(data, count * bytes, data + linear * bytes, p.dtype);
  }

  int64_t ArgValue(int arg) const override { return ctx_.args[arg]; }

  const absl::Status& read_error() const { return reader_.error(); }

 private:
  const ir::SNodeTree& snodes_;
  const char* root_;
  const QdLaunchContext& ctx_;
  const std::vector<ir::KernelParam>& params_;
  mutable absl::flat_hash_map<int, ir::PlaceLayout> layouts_;
  mutable PagedReader reader_;
};

std::vector<int64_t> Signature(const LaunchSizer::Dependencies& deps,
                               const QdLaunchContext& ctx,
                               absl::Span<const ResolvedArgument> args,
                               absl::Span<const uint64_t> field_generations,
                               bool* cacheable) {
  std::vector<int64_t> signature;
  for (int arg : deps.args)
    signature.push_back(ctx.args[arg]);
  for (int arg : deps.shape_args) {
    for (int64_t extent : args[arg].shape)
      signature.push_back(extent);
  }
  for (int arg : deps.data_args) {
    signature.push_back(reinterpret_cast<int64_t>(args[arg].data));
    signature.push_back(static_cast<int64_t>(args[arg].data_generation));
    *cacheable &= args[arg].data_generation != 0;
  }
  for (int field : deps.fields) {
    signature.push_back(field < static_cast<int>(field_generations.size())
                            ? static_cast<int64_t>(field_generations[field])
                            : -1);
  }
  return signature;
}

// Where a body read's elements are for this launch.
ResolvedRead Resolve(const BodyRead& read, const CompiledKernel& kernel,
                     const ir::SNodeTree& snodes, const char* root,
                     const QdLaunchContext& ctx) {
  ResolvedRead out;
  if (read.is_field) {
    auto layout = snodes.Layout(read.id);
    if (!layout.ok() || root == nullptr)
      return out;
    out.base = root + layout->offset;
    out.dtype = snodes.node(read.id).dtype;
    out.extents = layout->shape;
    out.byte_strides = layout->axis_stride;
    return out;
  }
  const ir::KernelParam& p = kernel.params()[read.id];
  out.base = static_cast<const char*>(ctx.ndarray_data[read.id]);
  out.dtype = p.dtype;
  const int64_t bytes = std::max(1, ir::BitWidth(p.dtype) / 8);
  out.extents.assign(ctx.ndarray_shape[read.id],
                     ctx.ndarray_shape[read.id] + p.ndim);
  out.byte_strides.assign(p.ndim, bytes);
  for (int a = p.ndim - 2; a >= 0; --a)
    out.byte_strides[a] = out.byte_strides[a + 1] * out.extents[a + 1];
  return out;
}

absl::Status InLoop(const CompiledKernel& kernel, const AdStackSpec& stack,
                    const absl::Status& status) {
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat("kernel '", kernel.name(),
                                "': sizing the adstack of the loop at ",
                                stack.loc.ToString(), ": ", status.message()));
}

}  // namespace

void LaunchSizer::Dependencies::Add(const ir::SizeExpr& root) {
  std::vector<const ir::SizeExpr*> pending = {&root};
  while (!pending.empty()) {
    const ir::SizeExpr* e = pending.back();
    pending.pop_back();
    switch (e->kind()) {
      case ir::SizeExprKind::kArgValue:
        AddOnce(args, e->arg());
        break;
      case ir::SizeExprKind::kNdarrayShape:
        AddOnce(shape_args, e->arg());
        break;
      case ir::SizeExprKind::kNdarrayRead:
        AddOnce(shape_args, e->arg());
        AddOnce(data_args, e->arg());
        break;
      case ir::SizeExprKind::kFieldLoad:
        AddOnce(fields, e->snode_id());
        break;
      default:
        break;
    }
    for (const auto& child : e->children())
      pending.push_back(child.get());
  }
}

LaunchSizer::LaunchSizer(const std::vector<std::vector<AdStackSpec>>& tasks)
    : tasks_(tasks.size()) {
  for (size_t t = 0; t < tasks.size(); ++t) {
    TaskState& state = tasks_[t];
    state.stacks.resize(tasks[t].size());
    for (size_t k = 0; k < tasks[t].size(); ++k) {
      if (!tasks[t][k].size_expr)
        continue;
      state.deps.Add(*tasks[t][k].size_expr);
      state.stacks[k].deps.Add(*tasks[t][k].size_expr);
    }
  }
}

void LaunchSizer::Recognize(const CompiledKernel& kernel, int task,
                            const ir::SNodeTree& snodes) {
  TaskState& state = tasks_[task];
  state.recognized = true;
  const auto& params = kernel.params();
  const LeafWidthFn width = [&](bool is_field, int id) {
    ir::PrimitiveType type;
    if (is_field) {
      if (id < 0 || id >= snodes.size())
        return 0;
      // Reducers address elements by per-axis strides: a blocked layout
      // (several levels on one axis) takes the serial walk.
      absl::StatusOr<ir::PlaceLayout> layout = snodes.Layout(id);
      if (!layout.ok() || !layout->affine())
        return 0;
      type = snodes.node(id).dtype;
    } else {
      if (id < 0 || id >= static_cast<int>(params.size()) ||
          params[id].kind != ir::KernelParam::Kind::kNdarray)
        return 0;
      type = params[id].dtype;
    }
    return ir::IsInteger(type) ? ir::BitWidth(type) : 0;
  };
  const auto& stacks = kernel.task_adstacks()[task];
  for (size_t k = 0; k < stacks.size(); ++k) {
    if (!stacks[k].size_expr || stacks[k].checkpoints)
      continue;
    for (ReducerSpec& spec :
         RecognizeReducerSpecs(kernel.name(), task, static_cast<int>(k),
                               *stacks[k].size_expr, width)) {
      SpecState s;
      s.deps.Add(*spec.node);
      s.spec = std::move(spec);
      state.stacks[k].specs.push_back(std::move(s));
    }
  }
}

bool LaunchSizer::Captures(const CompiledKernel& kernel, int task,
                           const ir::SNodeTree& snodes) {
  if (!tasks_[task].recognized)
    Recognize(kernel, task, snodes);
  const std::vector<StackState>& stacks = tasks_[task].stacks;
  return std::any_of(stacks.begin(), stacks.end(),
                     [](const StackState& s) { return !s.specs.empty(); });
}

std::vector<const ReducerSpec*> LaunchSizer::specs(int task) const {
  std::vector<const ReducerSpec*> out;
  for (const StackState& stack : tasks_[task].stacks) {
    for (const SpecState& s : stack.specs)
      out.push_back(&s.spec);
  }
  return out;
}

namespace {

int64_t StackBytes(const AdStackSpec& stack, int64_t capacity) {
  return (8 + capacity * stack.slot_bytes + 7) / 8 * 8;
}

AdStackLayout WithOffsets(const std::vector<AdStackSpec>& stacks,
                          AdStackLayout layout) {
  for (size_t k = 0; k < stacks.size(); ++k) {
    layout.offsets.push_back(layout.stride);
    layout.stride += StackBytes(stacks[k], layout.capacities[k]);
    layout.checkpoints.push_back(stacks[k].checkpoints);
  }
  return layout;
}

// The stacks of one checkpointable loop.
struct CheckpointGroup {
  std::vector<size_t> segment;      // per-iteration stacks
  std::vector<size_t> checkpoints;  // segment-start stacks
  int64_t trips = 0;                // the sized trip count
  int64_t segment_bytes = 0;        // slot bytes per iteration
  int64_t checkpoint_bytes = 0;     // slot bytes per checkpoint
};

}  // namespace

AdStackLayout LayOut(const std::vector<AdStackSpec>& stacks,
                     std::vector<int64_t> capacities) {
  AdStackLayout layout;
  layout.capacities = std::move(capacities);
  return WithOffsets(stacks, std::move(layout));
}

AdStackLayout LayOutByKind(const std::vector<AdStackSpec>& stacks,
                           std::vector<int64_t> capacities) {
  AdStackLayout layout;
  layout.capacities = std::move(capacities);
  int64_t float_stride = 0;
  for (size_t k = 0; k < stacks.size(); ++k) {
    layout.capacities[k] = std::max<int64_t>(layout.capacities[k], 1);
    int64_t& stride =
        ir::IsFloat(stacks[k].dtype) ? float_stride : layout.int_stride;
    layout.offsets.push_back(stride);
    stride += (layout.capacities[k] * stacks[k].slot_bytes + 7) / 8 * 8;
    layout.checkpoints.push_back(stacks[k].checkpoints);
  }
  layout.stride = float_stride + layout.int_stride;
  return layout;
}

std::vector<int64_t> ChooseCheckpoints(const std::vector<AdStackSpec>& stacks,
                                       std::vector<int64_t>* capacities,
                                       int64_t threads, int64_t budget,
                                       bool forced, int64_t segment_length) {
  std::vector<int64_t>& caps = *capacities;
  std::vector<int64_t> segments(stacks.size(), 0);
  std::map<int, CheckpointGroup> groups;
  for (size_t k = 0; k < stacks.size(); ++k) {
    const int g = stacks[k].checkpoint_group;
    if (g < 0)
      continue;
    CheckpointGroup& group = groups[g];
    if (stacks[k].checkpoints) {
      caps[k] = 0;  // unsegmented until chosen below
      group.checkpoints.push_back(k);
      group.checkpoint_bytes += stacks[k].slot_bytes;
    } else {
      // Capacities are trip counts plus 2 setup slots.
      group.trips = std::max(group.trips, caps[k] - 2);
      group.segment.push_back(k);
      group.segment_bytes += stacks[k].slot_bytes;
    }
  }
  auto per_thread = [&] {
    int64_t bytes = 0;
    for (size_t k = 0; k < stacks.size(); ++k)
      bytes += StackBytes(stacks[k], caps[k]);
    return bytes;
  };
  auto segment = [&](CheckpointGroup& group, int64_t k) {
    for (size_t s : group.segment) {
      caps[s] = k + 2;
      segments[s] = k;
    }
    for (size_t s : group.checkpoints)
      caps[s] = (group.trips + k - 1) / k + 2;
  };
  if (forced)
    return segments;
  if (segment_length > 0) {
    for (auto& [id, group] : groups) {
      if (!group.segment.empty() && !group.checkpoints.empty() &&
          group.trips > segment_length)
        segment(group, segment_length);
    }
    return segments;
  }
  threads = std::max<int64_t>(threads, 1);
  if (budget <= 0 || per_thread() <= budget / threads)
    return segments;
  std::vector<CheckpointGroup*> order;
  for (auto& [id, group] : groups) {
    if (!group.segment.empty() && !group.checkpoints.empty() &&
        group.trips >= 4)
      order.push_back(&group);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const CheckpointGroup* a, const CheckpointGroup* b) {
                     return a->trips * a->segment_bytes >
                            b->trips * b->segment_bytes;
                   });
  for (CheckpointGroup* group : order) {
    const int64_t t = group->trips;
    const double ratio = static_cast<double>(group->checkpoint_bytes) /
                         static_cast<double>(group->segment_bytes);
    const int64_t k = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(std::sqrt(t * ratio))), 1, t);
    const int64_t kept = (t + k - 1) / k + 2;
    if ((k + 2) * group->segment_bytes + kept * group->checkpoint_bytes >=
        (t + 2) * group->segment_bytes)
      continue;  // segmenting would not save memory
    segment(*group, k);
    if (per_thread() <= budget / threads)
      break;
  }
  return segments;
}

void CheckpointWithinBudget(const CompileConfig& config,
                            const CompiledKernel& kernel, int task,
                            int64_t threads_at_once, int64_t budget,
                            AdStackLayout* layout) {
  const std::vector<AdStackSpec>& stacks = kernel.task_adstacks()[task];
  // Every row of a gated heap is live at once.
  const int64_t rows = layout->rows;
  if (rows > 0)
    threads_at_once = rows;
  std::vector<int64_t> capacities = layout->capacities;
  std::vector<int64_t> segments =
      ChooseCheckpoints(stacks, &capacities, threads_at_once, budget,
                        config.ad_stack_size > 0,
                        config.ad_stack_segment_length);
  // The sized layout stands unless the choice changed a capacity.
  if (capacities != layout->capacities) {
    *layout = LayOut(stacks, std::move(capacities));
    layout->rows = rows;
  }
  layout->segments = std::move(segments);
  layout->threads_at_once = threads_at_once;
}

absl::StatusOr<AdStackLayout> LaunchSizer::Size(
    const CompileConfig& config, const CompiledKernel& kernel, int task,
    const ir::SNodeTree& snodes, const char* root, const QdLaunchContext& ctx,
    absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations, AdStackStats* stats,
    const Evaluator* evaluate) {
  const std::vector<AdStackSpec>& stacks = kernel.task_adstacks()[task];
  TaskState& state = tasks_[task];
  if (!state.recognized)
    Recognize(kernel, task, snodes);
  bool cacheable = true;
  std::vector<int64_t> signature =
      Signature(state.deps, ctx, args, field_generations, &cacheable);
  const bool forced = config.ad_stack_size > 0;
  const bool evaluated =
      !forced && (state.deps.any() || std::any_of(stacks.begin(), stacks.end(),
                                                  [](const AdStackSpec& s) {
                                                    return s.size_expr;
                                                  }));
  AdStackLayout layout;
  if (evaluated && cacheable && state.cache.valid &&
      state.cache.signature == signature) {
    layout.capacities = state.cache.values;
    ++stats->cache_hits;
    return WithOffsets(stacks, std::move(layout));
  }
  if (evaluated && evaluate != nullptr) {
    absl::StatusOr<absl::optional<std::vector<int64_t>>> elsewhere =
        (*evaluate)();
    if (!elsewhere.ok())
      return elsewhere.status();
    if (*elsewhere) {
      layout.capacities = std::move(**elsewhere);
      state.cache.valid = cacheable;
      state.cache.signature = std::move(signature);
      state.cache.values = layout.capacities;
      return WithOffsets(stacks, std::move(layout));
    }
  }
  {
    layout.capacities.assign(stacks.size(), config.default_ad_stack_size);
    // Stacks whose capacity is not in the per-stack cache, with the
    // signature to store it under.
    struct Miss {
      int stack;
      std::vector<int64_t> signature;
      bool cacheable;
    };
    std::vector<Miss> misses;
    for (size_t k = 0; k < stacks.size(); ++k) {
      if (stacks[k].checkpoints) {
        layout.capacities[k] = 0;  // ChooseCheckpoints decides
      } else if (forced) {
        layout.capacities[k] = config.ad_stack_size;
      } else if (stacks[k].static_capacity > 0) {
        layout.capacities[k] = stacks[k].static_capacity;
      } else if (stacks[k].size_expr) {
        StackState& stack = state.stacks[k];
        bool ok = true;
        std::vector<int64_t> sig =
            Signature(stack.deps, ctx, args, field_generations, &ok);
        if (ok && stack.cache.valid && stack.cache.signature == sig) {
          layout.capacities[k] = stack.cache.values[0];
          ++stats->tree_cache_hits;
        } else {
          misses.push_back({static_cast<int>(k), std::move(sig), ok});
        }
      }
    }
    HostSizerInputs inputs(snodes, root, ctx, kernel.params(), memory_);
    // Captured MaxOverRange nodes of the missed stacks, with their values.
    absl::flat_hash_map<const ir::SizeExpr*, int64_t> results;
    struct Pending {
      SpecState* spec;
      const AdStackSpec* stack;
      const StackState* owner;
      std::vector<int64_t> signature;
      bool cacheable;
    };
    std::vector<Pending> pending;
    int max_depth = -1;
    for (const Miss& miss : misses) {
      StackState& stack = state.stacks[miss.stack];
      for (SpecState& s : stack.specs) {
        bool ok = true;
        std::vector<int64_t> sig =
            Signature(s.deps, ctx, args, field_generations, &ok);
        if (ok && s.cache.valid && s.cache.signature == sig) {
          results[s.spec.node] = s.cache.values[0];
          ++stats->reducer_cache_hits;
          continue;
        }
        max_depth = std::max(max_depth, s.spec.depth);
        pending.push_back(
            {&s, &stacks[miss.stack], &stack, std::move(sig), ok});
      }
    }
    // One round per dependency depth: a spec's bounds may read the results
    // of shallower ones.
    for (int depth = 0; reducer_ != nullptr && depth <= max_depth; ++depth) {
      std::vector<ReducerJob> jobs;
      std::vector<Pending*> dispatched;
      bool stalled = false;
      for (Pending& p : pending) {
        const ReducerSpec& spec = p.spec->spec;
        if (spec.depth != depth)
          continue;
        const bool ready =
            std::all_of(spec.deps.begin(), spec.deps.end(), [&](int d) {
              return results.contains(p.owner->specs[d].spec.node);
            });
        if (!ready) {
          stalled = true;
          continue;
        }
        ReducerJob job;
        bool empty = false;
        for (int a = 0; a < spec.num_axes; ++a) {
          for (const auto* bound : {&spec.begin[a], &spec.end[a]}) {
            absl::StatusOr<int64_t> v = EvaluateSizeExprValue(
                *SubstituteConstants(*bound, results), inputs);
            if (v.ok() && !inputs.read_error().ok())
              v = inputs.read_error();
            if (!v.ok())
              return InLoop(kernel, *p.stack, v.status());
            empty |= *v == kNoValue;
            (bound == &spec.begin[a] ? job.begin : job.end).push_back(*v);
          }
        }
        if (empty) {
          // A bound with no value makes the whole maximum empty, as the
          // serial walk has it.
          results[spec.node] = kNoValue;
          continue;
        }
        job.code = spec.body.code;
        for (BodyInstr& in : job.code) {
          if (in.op == BodyOp::kShape)
            in = {BodyOp::kConst, -1, -1, ctx.ndarray_shape[in.a][in.b]};
          else if (in.op == BodyOp::kArg)
            in = {BodyOp::kConst, -1, -1, ctx.args[in.a]};
        }
        job.reads = spec.body.reads;
        for (const BodyRead& read : job.reads)
          job.resolved.push_back(Resolve(read, kernel, snodes, root, ctx));
        jobs.push_back(std::move(job));
        dispatched.push_back(&p);
      }
      if (jobs.empty()) {
        if (stalled)
          break;  // no progress: what is left takes the serial walk
        continue;
      }
      const auto start = std::chrono::steady_clock::now();
      const int64_t device_jobs = reducer_->device_jobs();
      absl::StatusOr<std::vector<int64_t>> values = reducer_->Reduce(jobs);
      stats->reducer_seconds += std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count();
      if (!values.ok())
        break;  // the serial walk takes over, guard included
      ++stats->reducer_rounds;
      stats->reducer_dispatches += static_cast<int64_t>(jobs.size());
      stats->device_reducer_dispatches += reducer_->device_jobs() - device_jobs;
      for (size_t j = 0; j < dispatched.size(); ++j) {
        Pending& p = *dispatched[j];
        results[p.spec->spec.node] = (*values)[j];
        p.spec->cache.valid = p.cacheable;
        p.spec->cache.signature = std::move(p.signature);
        p.spec->cache.values = {(*values)[j]};
      }
    }
    for (Miss& miss : misses) {
      const AdStackSpec& stack = stacks[miss.stack];
      absl::StatusOr<int64_t> value = EvaluateSizeExpr(
          *SubstituteConstants(stack.size_expr, results), inputs);
      ++stats->tree_evaluations;
      if (value.ok() && !inputs.read_error().ok())
        value = inputs.read_error();
      if (!value.ok())
        return InLoop(kernel, stack, value.status());
      const int64_t capacity = std::max<int64_t>(*value, 2);  // setup slots
      layout.capacities[miss.stack] = capacity;
      Cache& cache = state.stacks[miss.stack].cache;
      cache.valid = miss.cacheable;
      cache.signature = std::move(miss.signature);
      cache.values = {capacity};
    }
    if (evaluated) {
      state.cache.valid = cacheable;
      state.cache.signature = std::move(signature);
      state.cache.values = layout.capacities;
    }
  }
  return WithOffsets(stacks, std::move(layout));
}

namespace {

// Where `gate`'s array lies at this launch.
absl::StatusOr<GateArray> ResolveGate(const ir::AdStackGate& gate,
                                      const CompiledKernel& kernel,
                                      const ir::SNodeTree& snodes,
                                      const char* root,
                                      const QdLaunchContext& ctx) {
  GateArray array;
  array.dtype = gate.dtype;
  if (gate.is_field) {
    QD_ASSIGN_OR_RETURN(ir::PlaceLayout layout, snodes.Layout(gate.id));
    array.base = root + layout.offset;
    array.extents = layout.shape;
    array.byte_strides = layout.axis_stride;
  } else {
    const ir::KernelParam& p = kernel.params()[gate.id];
    array.base = static_cast<const char*>(ctx.ndarray_data[gate.id]);
    array.extents.assign(ctx.ndarray_shape[gate.id],
                         ctx.ndarray_shape[gate.id] + p.ndim);
    array.byte_strides.assign(p.ndim, std::max(1, ir::BitWidth(p.dtype) / 8));
    for (int a = p.ndim - 2; a >= 0; --a)
      array.byte_strides[a] = array.byte_strides[a + 1] * array.extents[a + 1];
  }
  if (array.extents.size() != gate.indices.size())
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("the gate's array '", gate.label, "' has ",
                                  array.extents.size(), " axes, the gate ",
                                  gate.indices.size(), " indices"));
  for (const ir::AdStackGateIndex& k : gate.indices) {
    using Kind = ir::AdStackGateIndex::Kind;
    array.fixed.push_back(k.kind == Kind::kConst ? k.value
                          : k.kind == Kind::kArg ? ctx.args[k.value]
                                                 : -1);
    array.moduli.push_back(k.kind == Kind::kLoopDigit ? k.modulus : 0);
  }
  return array;
}

LaunchSizer::Dependencies GateDependencies(const ir::AdStackGate& gate) {
  LaunchSizer::Dependencies deps;
  if (gate.is_field) {
    deps.fields.push_back(gate.id);
  } else {
    deps.shape_args.push_back(gate.id);
    deps.data_args.push_back(gate.id);
  }
  for (const ir::AdStackGateIndex& k : gate.indices) {
    if (k.kind == ir::AdStackGateIndex::Kind::kArg)
      AddOnce(deps.args, static_cast<int>(k.value));
  }
  return deps;
}

}  // namespace

absl::Status LaunchSizer::GateHeap(
    const CompileConfig& config, const CompiledKernel& kernel, int task,
    const ir::SNodeTree& snodes, const char* root, const QdLaunchContext& ctx,
    absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations, int64_t threads,
    int64_t slice_bytes, int64_t budget, AdStackLayout* layout,
    AdStackStats* stats) {
  layout->rows = 0;
  const auto& gates = kernel.adstack_gates();
  if (task >= static_cast<int>(gates.size()) || !gates[task] ||
      slice_bytes <= 0) {
    return absl::OkStatus();
  }
  const int64_t threshold = config.ad_stack_sparse_threshold_bytes;
  if (threshold > 0 && threads * slice_bytes <= threshold)
    return absl::OkStatus();
  const ir::AdStackGate& gate = *gates[task];
  if (gate.is_field) {
    // Gate counts walk the array by per-axis strides: a blocked layout
    // keeps per-thread slices.
    absl::StatusOr<ir::PlaceLayout> layout = snodes.Layout(gate.id);
    if (layout.ok() && !layout->affine())
      return absl::OkStatus();
  }
  bool cacheable = true;
  std::vector<int64_t> signature = Signature(
      GateDependencies(gate), ctx, args, field_generations, &cacheable);
  Cache& cache = tasks_[task].gate_count;
  if (!cacheable || !cache.valid || cache.signature != signature) {
    absl::StatusOr<GateArray> array =
        ResolveGate(gate, kernel, snodes, root, ctx);
    absl::StatusOr<int64_t> passing =
        array.ok() ? CountGatePasses(gate, *array, memory_)
                   : absl::StatusOr<int64_t>(array.status());
    if (!passing.ok())
      return InLoop(kernel, kernel.task_adstacks()[task][0], passing.status());
    cache.valid = cacheable;
    cache.signature = std::move(signature);
    cache.values = {*passing};
    ++stats->gate_counts;
  }
  const int64_t rows = std::max<int64_t>(cache.values[0], 1);
  if (rows * slice_bytes > budget || (threshold > 0 && rows >= threads))
    return absl::OkStatus();
  layout->rows = rows;
  return absl::OkStatus();
}

int64_t AdStackBudget(const CompileConfig& config, HeapMemory memory,
                      int64_t memory_bytes) {
  if (config.ad_stack_max_bytes > 0)
    return config.ad_stack_max_bytes;
  switch (memory) {
    case HeapMemory::kHostRam:
      return memory_bytes / 4;
    case HeapMemory::kDeviceMemory:
      if (config.device_memory_GB > 0)
        return static_cast<int64_t>(config.device_memory_GB * (1LL << 30));
      if (config.device_memory_fraction > 0)
        return static_cast<int64_t>(config.device_memory_fraction *
                                    memory_bytes);
      return memory_bytes / 2;
    case HeapMemory::kVulkanHeaps:
      return 2 * kVulkanHeapBytes;
  }
  return memory_bytes / 4;
}

absl::StatusOr<int64_t> ThreadsWithinBudget(const CompiledKernel& kernel,
                                            int task,
                                            const AdStackLayout& layout,
                                            int64_t wanted, int64_t unit,
                                            int64_t budget) {
  const int64_t stride = std::max<int64_t>(layout.stride, 1);
  unit = std::max<int64_t>(unit, 1);
  const int64_t units = budget / (stride * unit);
  if (units >= 1)
    return std::min(wanted, units * unit);
  // The stack that takes the most names the loop.
  const std::vector<AdStackSpec>& stacks = kernel.task_adstacks()[task];
  size_t largest = 0;
  for (size_t k = 1; k < stacks.size() && k < layout.capacities.size(); ++k) {
    if (layout.capacities[k] * stacks[k].slot_bytes >
        layout.capacities[largest] * stacks[largest].slot_bytes)
      largest = k;
  }
  const std::string where =
      stacks.empty() ? "" : absl::StrCat(" at ", stacks[largest].loc.ToString());
  const bool segmented = std::any_of(layout.segments.begin(),
                                     layout.segments.end(),
                                     [](int64_t k) { return k > 0; });
  return MakeError(
      ErrorKind::kRuntime,
      absl::StrCat("kernel '", kernel.name(), "': the adstacks of the loop",
                   where, " need ", stride, " bytes per thread",
                   segmented ? " at the smallest checkpointed schedule" : "",
                   ", and the ",
                   unit, " threads a launch runs at the least need ",
                   stride * unit, " bytes, more than the ", budget,
                   "-byte adstack heap budget (ad_stack_max_bytes; "
                   "qd.init(ad_stack_max_bytes=...) or QD_AD_STACK_MAX_BYTES "
                   "raises it)"));
}

void BeginLaunchStats(int num_tasks, AdStackStats* stats) {
  stats->bytes_needed = 0;
  stats->checkpointed = 0;
  stats->capacities.assign(num_tasks, {});
  stats->segments.assign(num_tasks, {});
  stats->checkpoint_capacities.assign(num_tasks, {});
  stats->per_thread_stride.assign(num_tasks, 0);
  stats->gated_rows.assign(num_tasks, 0);
}

void RecordLayout(const AdStackLayout& layout, int task, int num_tasks,
                  int64_t threads, AdStackStats* stats) {
  if (static_cast<int>(stats->capacities.size()) < num_tasks) {
    stats->capacities.resize(num_tasks);
    stats->per_thread_stride.resize(num_tasks);
  }
  if (static_cast<int>(stats->segments.size()) < num_tasks) {
    stats->segments.resize(num_tasks);
    stats->checkpoint_capacities.resize(num_tasks);
  }
  std::vector<int64_t>& capacities = stats->capacities[task];
  std::vector<int64_t>& segments = stats->segments[task];
  std::vector<int64_t>& checkpoints = stats->checkpoint_capacities[task];
  capacities.clear();
  segments.clear();
  checkpoints.clear();
  for (size_t k = 0; k < layout.capacities.size(); ++k) {
    if (k < layout.checkpoints.size() && layout.checkpoints[k]) {
      checkpoints.push_back(layout.capacities[k]);
      continue;
    }
    capacities.push_back(layout.capacities[k]);
    segments.push_back(k < layout.segments.size() ? layout.segments[k] : 0);
    if (segments.back() > 0)
      ++stats->checkpointed;
  }
  stats->per_thread_stride[task] = layout.stride;
  stats->threads_at_once = layout.threads_at_once;
  if (static_cast<int>(stats->gated_rows.size()) < num_tasks)
    stats->gated_rows.resize(num_tasks);
  stats->gated_rows[task] = layout.rows;
  const int64_t slices = layout.rows > 0 ? layout.rows : threads;
  stats->bytes_needed = std::max(stats->bytes_needed, layout.stride * slices);
}

}  // namespace quadrants::adstack
