#include "quadrants/runtime/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "llvm/IR/LLVMContext.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/codegen/llvm/optimize.h"
#include "quadrants/codegen/llvm/runtime_linker.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/llvm/runtime_module/runtime_x86_64.h"

namespace quadrants::cpu {
namespace {

using TaskFn = void (*)(QdLaunchContext*, int64_t, int64_t, int32_t);
using BoundsFn = void (*)(QdLaunchContext*, int64_t*);

struct CpuTask {
  ir::TaskKind kind;
  TaskFn run = nullptr;
  BoundsFn bounds = nullptr;
  int64_t cells = 0;
};

class CpuCompiledKernel : public CompiledKernel {
 public:
  CpuCompiledKernel(const ir::Kernel& kernel, std::vector<RuntimeErrorSite> sites,
                    std::vector<CpuTask> tasks, std::vector<std::vector<AdStackInfo>> stacks)
      : CompiledKernel(kernel.name(), kernel.params(), std::move(sites),
                       static_cast<int>(tasks.size()), std::move(stacks)),
        tasks_(std::move(tasks)) {}
  const std::vector<CpuTask>& tasks() const { return tasks_; }

 private:
  std::vector<CpuTask> tasks_;
};

}  // namespace

CpuBackend::CpuBackend(const CompileConfig& config, std::unique_ptr<codegen::CpuJit> jit)
    : config_(config), jit_(std::move(jit)), pool_(config.cpu_max_num_threads) {}

absl::StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(const CompileConfig& config) {
  if (config.cpu_max_num_threads < 0) {
    return MakeError(ErrorKind::kType,
                     absl::StrCat("cpu_max_num_threads must be >= 0, got ",
                                  config.cpu_max_num_threads));
  }
  QD_ASSIGN_OR_RETURN(auto jit, codegen::CpuJit::Create());
  return std::make_unique<CpuBackend>(config, std::move(jit));
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> CpuBackend::Compile(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  auto context = std::make_unique<llvm::LLVMContext>();
  codegen::LoweringOptions options;
  options.check_out_of_bound = config_.checks_bounds();
  options.debug = config_.debug;
  options.triple = jit_->triple();
  options.data_layout = jit_->data_layout();
  QD_ASSIGN_OR_RETURN(codegen::LoweredKernel lowered,
                      codegen::LowerKernel(offloaded, snodes, options, *context));
  std::vector<std::string> entry_points;
  for (const auto& task : lowered.tasks) {
    entry_points.push_back(task.function);
    if (!task.bounds_function.empty()) entry_points.push_back(task.bounds_function);
  }
  QD_RETURN_IF_ERROR(codegen::LinkRuntime(
      *lowered.module,
      absl::MakeConstSpan(kRuntimeBitcodeX86_64, kRuntimeBitcodeX86_64_size),
      entry_points));
  codegen::OptimizeModule(*lowered.module, jit_->target_machine());
  QD_ASSIGN_OR_RETURN(std::string dylib,
                      jit_->Add(std::move(lowered.module), std::move(context)));
  std::vector<CpuTask> tasks;
  std::vector<std::vector<AdStackInfo>> task_adstacks;
  for (const auto& task : lowered.tasks) {
    std::vector<AdStackInfo> stacks;
    for (const auto& spec : task.ad_stacks) {
      stacks.push_back({spec.dtype, spec.slot_bytes, spec.static_capacity, spec.loc});
    }
    task_adstacks.push_back(std::move(stacks));
    CpuTask cpu{task.kind};
    QD_ASSIGN_OR_RETURN(void* run, jit_->Lookup(dylib, task.function));
    cpu.run = reinterpret_cast<TaskFn>(run);
    if (!task.bounds_function.empty()) {
      QD_ASSIGN_OR_RETURN(void* bounds, jit_->Lookup(dylib, task.bounds_function));
      cpu.bounds = reinterpret_cast<BoundsFn>(bounds);
    }
    cpu.cells = task.struct_for_cells;
    tasks.push_back(cpu);
  }
  std::vector<RuntimeErrorSite> sites;
  for (const auto& site : lowered.error_sites) {
    sites.push_back({site.description, site.loc, site.value_types});
  }
  return std::make_shared<CpuCompiledKernel>(offloaded, std::move(sites), std::move(tasks),
                                             std::move(task_adstacks));
}

void CpuBackend::PublishAdStacks(int task, const std::vector<AdStackInfo>& stacks,
                                 int threads) {
  adstack_offsets_.clear();
  adstack_max_sizes_.clear();
  int64_t stride = 0;
  for (const AdStackInfo& stack : stacks) {
    int64_t capacity = config_.ad_stack_size > 0 ? config_.ad_stack_size
                       : stack.static_capacity > 0 ? stack.static_capacity
                                                   : config_.default_ad_stack_size;
    adstack_offsets_.push_back(stride);
    adstack_max_sizes_.push_back(capacity);
    // An i64 count, then the slots; every stack starts 8-byte aligned.
    stride += (8 + capacity * stack.slot_bytes + 7) / 8 * 8;
  }
  const int64_t need = stride * threads;
  if (need > adstack_stats_.heap_bytes) {
    const int64_t grown = std::max(need, 2 * adstack_stats_.heap_bytes);
    adstack_heap_ = std::make_unique<char[]>(grown);
    adstack_stats_.heap_bytes = grown;
    ++adstack_stats_.heap_grows;
  }
  runtime_.adstack_heap = adstack_heap_.get();
  runtime_.adstack_per_thread_stride = stride;
  runtime_.adstack_offsets = adstack_offsets_.data();
  runtime_.adstack_max_sizes = adstack_max_sizes_.data();
  runtime_.adstack_overflow = 0;
  if (static_cast<int>(adstack_stats_.capacities.size()) <= task) {
    adstack_stats_.capacities.resize(task + 1);
    adstack_stats_.per_thread_stride.resize(task + 1);
  }
  adstack_stats_.capacities[task] = adstack_max_sizes_;
  adstack_stats_.per_thread_stride[task] = stride;
  adstack_stats_.bytes_needed = std::max(adstack_stats_.bytes_needed, need);
}

void CpuBackend::CheckAdStackOverflow(int task, const std::vector<AdStackInfo>& stacks) {
  const int stack = runtime_.adstack_overflow - 1;
  if (stack < 0) return;
  runtime_.adstack_overflow = 0;
  if (pending_) return;
  RuntimeErrorRecord record;
  record.code = RuntimeErrorRecord::Code::kAdStackOverflow;
  record.site = stack;
  record.values[0] = task;
  record.values[1] = stack;
  record.values[2] = adstack_max_sizes_[stack];
  pending_ = record;
}

absl::StatusOr<BackendLaunchStats> CpuBackend::Launch(
    const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args) {
  const auto& compiled = static_cast<const CpuCompiledKernel&>(kernel);
  if (args.size() > QD_MAX_ARGS) {
    return MakeError(ErrorKind::kType,
                     absl::StrCat("kernel '", kernel.name(), "' takes ", args.size(),
                                  " arguments; at most ", QD_MAX_ARGS, " are supported"));
  }
  QdLaunchContext ctx{};
  ctx.runtime = &runtime_;
  for (size_t i = 0; i < args.size(); ++i) {
    ctx.args[i] = args[i].slot;
    ctx.ndarray_data[i] = args[i].data;
    for (size_t axis = 0; axis < args[i].shape.size() && axis < QD_MAX_NDIM; ++axis) {
      ctx.ndarray_shape[i][axis] = args[i].shape[axis];
    }
  }
  BackendLaunchStats stats;
  bool any_stacks = false;
  for (size_t t = 0; t < compiled.tasks().size(); ++t) {
    const CpuTask& task = compiled.tasks()[t];
    const auto& stacks = compiled.task_adstacks()[t];
    if (!stacks.empty()) {
      if (!any_stacks) adstack_stats_.bytes_needed = 0;
      any_stacks = true;
      // Heap slices are per thread id; a serial task only uses thread 0.
      PublishAdStacks(static_cast<int>(t), stacks,
                      task.kind == ir::TaskKind::kSerial ? 1 : pool_.num_threads());
    }
    ++stats.tasks;
    int64_t range[2] = {0, 1};
    switch (task.kind) {
      case ir::TaskKind::kSerial:
        task.run(&ctx, 0, 1, 0);
        if (!stacks.empty()) CheckAdStackOverflow(static_cast<int>(t), stacks);
        continue;
      case ir::TaskKind::kRangeFor:
        task.bounds(&ctx, range);
        break;
      case ir::TaskKind::kStructFor:
        range[1] = task.cells;
        break;
    }
    pool_.ParallelFor(range[0], range[1], [&](int64_t begin, int64_t end, int thread) {
      task.run(&ctx, begin, end, thread);
    });
    stats.max_threads_used = std::max(stats.max_threads_used, pool_.threads_used_last());
    if (!stacks.empty()) CheckAdStackOverflow(static_cast<int>(t), stacks);
  }
  if (any_stacks) {
    adstack_stats_.capacities.resize(compiled.tasks().size());
    adstack_stats_.per_thread_stride.resize(compiled.tasks().size());
  }
  return stats;
}

absl::optional<RuntimeErrorRecord> CpuBackend::TakeError() {
  if (pending_) {
    absl::optional<RuntimeErrorRecord> record = pending_;
    pending_.reset();
    runtime_.error_code = QD_ERROR_NONE;
    return record;
  }
  if (runtime_.error_code == QD_ERROR_NONE) return absl::nullopt;
  RuntimeErrorRecord record;
  record.code = static_cast<RuntimeErrorRecord::Code>(runtime_.error_code);
  record.site = runtime_.error_site;
  std::copy(runtime_.error_values, runtime_.error_values + 3, record.values);
  runtime_.error_code = QD_ERROR_NONE;
  return record;
}

}  // namespace quadrants::cpu
