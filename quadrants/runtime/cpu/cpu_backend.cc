#include "quadrants/codegen/llvm/compiler_identity.h"
#include "quadrants/runtime/host/launch_random.h"
#include "quadrants/runtime/cpu/cpu_backend.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/xxhash.h"
#include "quadrants/codegen/cpu/parallel_codegen.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/codegen/llvm/optimize.h"
#include "quadrants/codegen/llvm/runtime_linker.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"
#include "quadrants/runtime/adstack/launch_sizer.h"
#include "quadrants/runtime/host/host_max_reducer.h"
#include "quadrants/runtime/llvm/host/launch_state.h"
#include "quadrants/device_runtime/runtime_x86_64.h"

namespace quadrants::cpu {
namespace {

using TaskFn = void (*)(QdLaunchContext*, int64_t, int64_t, int32_t);

using BoundsFn = void (*)(QdLaunchContext*, int64_t*);

struct CpuTask {
  ir::TaskKind kind;
  TaskFn run = nullptr;
  BoundsFn bounds = nullptr;
  int64_t cells = 0;
  int lanes = 1;  // iterations per step (SIMD lanes)
};

class CpuCompiledKernel : public CompiledKernel {
 public:
  CpuCompiledKernel(CompiledKernelData artifact,
                    std::vector<CpuTask> tasks)
      : CompiledKernel(std::move(artifact)), tasks_(std::move(tasks)) {}
  const std::vector<CpuTask>& tasks() const { return tasks_; }

  // Sizes the tasks' adstacks at launch (its caches change per launch).
  mutable std::unique_ptr<adstack::LaunchSizer> sizer;

 private:
  std::vector<CpuTask> tasks_;
};

}  // namespace

CpuBackend::CpuBackend(const CompileConfig& config,
                       std::unique_ptr<codegen::CpuJit> jit)
    : config_(config),
      jit_(std::move(jit)),
      pool_(config.cpu_max_num_threads),
      reducer_(std::make_unique<host::HostMaxReducer>(&pool_)),
      cache_(offline_cache::OpenOfflineCache(config, codegen::LlvmCompilerIdentity(),
                                          &cache_stats_)) {}

absl::StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(
    const CompileConfig& config) {
  if (config.cpu_max_num_threads < 0) {
    return MakeError(ErrorKind::kType,
                     absl::StrCat("cpu_max_num_threads must be >= 0, got ",
                                  config.cpu_max_num_threads));
  }
  if (config.device_id != 0) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("device_id ", config.device_id,
                                  " names no device: the cpu backend has one, "
                                  "device_id 0"));
  }
  QD_ASSIGN_OR_RETURN(auto jit, codegen::CpuJit::Create());
  return std::make_unique<CpuBackend>(config, std::move(jit));
}

bool CpuBackend::fuses_sin_cos() const {
  const codegen::LoweringOptions options = LoweringOptions();
  return options.simd_vector_bits > 0 && !options.check_out_of_bound &&
         !options.debug;
}

codegen::LoweringOptions CpuBackend::LoweringOptions() const {
  codegen::LoweringOptions options;
  options.check_out_of_bound = config_.checks_bounds();
  options.debug = config_.debug;
  options.adstack_size_forced = config_.ad_stack_size > 0;
  options.simd_vector_bits = config_.cpu_simd ? jit_->VectorBits() : 0;
  options.triple = jit_->triple();
  options.data_layout = jit_->data_layout();
  return options;
}

namespace {

// LLVM's vectorizers for `artifact`'s module. Tasks in SIMD lanes are
// vector code already: the SLP vectorizer (most of the optimization time of
// such a module) runs only when a parallel task stayed scalar, while the
// loop vectorizer still speeds up the lanes' own loops (the adstack
// recurrence's reverse kernel runs 16% slower without it).
codegen::Vectorizers VectorizersFor(const CompiledKernelData& artifact,
                                    bool cpu_simd) {
  const bool scalar_task =
      std::any_of(artifact.tasks.begin(), artifact.tasks.end(),
                  [](const CompiledTask& task) {
                    return task.kind != ir::TaskKind::kSerial &&
                           task.simd_lanes <= 1;
                  });
  return {cpu_simd, cpu_simd && scalar_task};
}

}  // namespace

absl::StatusOr<CompiledKernelData> CpuBackend::Generate(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  llvm::LLVMContext context;
  QD_ASSIGN_OR_RETURN(
      codegen::LoweredKernel lowered,
      codegen::LowerKernel(offloaded, snodes, LoweringOptions(), context));
  std::vector<std::string> entry_points;
  for (const auto& task : lowered.data.tasks) {
    // Nothing writes the launch context while a kernel runs: its loads
    // (arguments, ndarray addresses and shapes) leave the loops, which then
    // vectorize.
    lowered.module->getFunction(task.function)
        ->addParamAttr(0, llvm::Attribute::NoAlias);
    entry_points.push_back(task.function);
    if (!task.bounds_function.empty())
      entry_points.push_back(task.bounds_function);
  }
  const auto runtime =
      absl::MakeConstSpan(kRuntimeBitcodeX86_64, kRuntimeBitcodeX86_64_size);
  const codegen::Vectorizers vectorizers =
      VectorizersFor(lowered.data, config_.cpu_simd);
  const std::vector<std::vector<std::string>> groups =
      CompileGroups(lowered);
  CompiledKernelData artifact = std::move(lowered.data);
  if (groups.size() > 1) {
    QD_ASSIGN_OR_RETURN(std::vector<std::string> objects,
                        codegen::CompileInPartitions(*lowered.module, groups,
                                                     runtime, vectorizers));
    artifact.binary = codegen::PackObjects(objects);
    return artifact;
  }
  QD_RETURN_IF_ERROR(
      codegen::LinkRuntime(*lowered.module, runtime, entry_points));
  codegen::OptimizeModule(*lowered.module, jit_->target_machine(),
                          vectorizers);
  QD_ASSIGN_OR_RETURN(artifact.binary, jit_->EmitObject(*lowered.module));
  return artifact;
}

std::vector<std::vector<std::string>> CpuBackend::CompileGroups(
    const codegen::LoweredKernel& lowered) const {
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  int64_t instructions = 0;
  for (const llvm::Function& fn : *lowered.module)
    instructions += fn.getInstructionCount();
  const size_t count = static_cast<size_t>(
      std::min<int64_t>({config_.num_compile_threads, cores,
                         static_cast<int64_t>(lowered.data.tasks.size()),
                         instructions / kInstructionsPerCompileThread}));
  std::vector<std::vector<std::string>> groups(std::max<size_t>(count, 1));
  for (size_t t = 0; t < lowered.data.tasks.size(); ++t) {
    const CompiledTask& task = lowered.data.tasks[t];
    std::vector<std::string>& group = groups[t % groups.size()];
    group.push_back(task.function);
    if (!task.bounds_function.empty())
      group.push_back(task.bounds_function);
  }
  return groups;
}

std::string CpuBackend::CacheKey(const ir::Kernel& offloaded,
                                 const ir::SNodeTree& snodes) const {
  if (!cache_)
    return "";
  // The runtime module is linked into every kernel.
  static const uint64_t runtime_hash =
      llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(kRuntimeBitcodeX86_64,
                                                kRuntimeBitcodeX86_64_size));
  return cache_->Key(
      offloaded, snodes,
      absl::StrCat(LoweringOptions().ToString(), " runtime=", runtime_hash,
                   " simd=", config_.cpu_simd),
      jit_->TargetDescription());
}

absl::StatusOr<std::string> CpuBackend::LinkObjects(
    const CompiledKernelData& artifact) {
  std::vector<std::string> objects = codegen::UnpackObjects(artifact.binary);
  if (objects.empty())
    return MakeError(ErrorKind::kRuntime, "a kernel's objects are truncated");
  return jit_->AddObjects(objects);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> CpuBackend::Compile(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  snodes_ = &snodes;
  const std::string key = CacheKey(offloaded, snodes);
  QD_ASSIGN_OR_RETURN(
      auto generated,
      offline_cache::LoadOrGenerate<std::string>(
          cache_ ? &*cache_ : nullptr, key, &cache_stats_,
          [&] { return Generate(offloaded, snodes); },
          [&](const CompiledKernelData& artifact) {
            return LinkObjects(artifact);
          }));
  return Instantiate(key, std::move(generated.first), generated.second);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> CpuBackend::LoadCached(
    const std::string& key, const ir::SNodeTree& snodes) {
  auto hit = offline_cache::LoadExisting<std::string>(
      cache_ ? &*cache_ : nullptr, key, &cache_stats_,
      [&](const CompiledKernelData& artifact) {
        return LinkObjects(artifact);
      });
  if (!hit)
    return std::shared_ptr<CompiledKernel>();
  snodes_ = &snodes;
  return Instantiate(key, std::move(hit->first), hit->second);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> CpuBackend::Instantiate(
    const std::string& key, CompiledKernelData lowered,
    const std::string& dylib) {
  std::vector<CpuTask> tasks;
  for (const auto& task : lowered.tasks) {
    CpuTask cpu{task.kind};
    QD_ASSIGN_OR_RETURN(void* run, jit_->Lookup(dylib, task.function));
    cpu.run = reinterpret_cast<TaskFn>(run);
    if (!task.bounds_function.empty()) {
      QD_ASSIGN_OR_RETURN(void* bounds,
                          jit_->Lookup(dylib, task.bounds_function));
      cpu.bounds = reinterpret_cast<BoundsFn>(bounds);
    }
    cpu.cells = task.struct_for_cells;
    cpu.lanes = std::max(1, task.simd_lanes);
    tasks.push_back(cpu);
  }
  auto compiled =
      std::make_shared<CpuCompiledKernel>(std::move(lowered), std::move(tasks));
  compiled->set_cache_key(key);
  compiled->sizer =
      std::make_unique<adstack::LaunchSizer>(compiled->task_adstacks());
  compiled->sizer->set_reducer(reducer_.get());
  return compiled;
}

namespace {

int64_t PhysicalMemory() {
  return int64_t{sysconf(_SC_PHYS_PAGES)} * sysconf(_SC_PAGESIZE);
}

}  // namespace

int64_t CpuBackend::StackSlots(const CompiledKernel& kernel, int task) const {
  const CpuTask& run = static_cast<const CpuCompiledKernel&>(kernel).tasks()[task];
  // A serial task only uses thread 0.
  const int threads =
      run.kind == ir::TaskKind::kSerial ? 1 : pool_.num_threads();
  return int64_t{threads} * run.lanes;
}

absl::StatusOr<bool> CpuBackend::SizeBeforeRunning(
    const CompiledKernel& kernel, const QdLaunchContext& ctx,
    absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations,
    std::vector<absl::optional<adstack::AdStackLayout>>* sized) {
  const auto& compiled = static_cast<const CpuCompiledKernel&>(kernel);
  const int64_t budget = adstack::AdStackBudget(
      config_, adstack::HeapMemory::kHostRam, PhysicalMemory());
  bool over = false;
  sized->assign(compiled.tasks().size(), absl::nullopt);
  for (size_t t = 0; t < compiled.tasks().size(); ++t) {
    if (compiled.task_adstacks()[t].empty())
      continue;
    QD_ASSIGN_OR_RETURN(
        (*sized)[t],
        compiled.sizer->Size(config_, kernel, static_cast<int>(t), *snodes_,
                             runtime_.root, ctx, args, field_generations,
                             &adstack_stats_));
    // As adstack::ChooseCheckpoints decides: forced capacities never
    // segment; otherwise the slices of the threads at once must fit. A
    // gated heap counts threads here, not rows: at worst the variant is
    // built for a launch that then segments nothing.
    over = over || (config_.ad_stack_size <= 0 && budget > 0 &&
                    (*sized)[t]->stride >
                        budget / StackSlots(kernel, static_cast<int>(t)));
  }
  return over;
}

absl::Status CpuBackend::PublishAdStacks(
    const CompiledKernel& kernel, int task, const QdLaunchContext& ctx,
    absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations,
    const adstack::AdStackLayout* sized) {
  const auto& compiled = static_cast<const CpuCompiledKernel&>(kernel);
  const int lanes = compiled.tasks()[task].lanes;
  if (sized != nullptr) {
    adstack_layout_ = *sized;
  } else {
    QD_ASSIGN_OR_RETURN(adstack_layout_,
                        compiled.sizer->Size(config_, kernel, task, *snodes_,
                                             runtime_.root, ctx, args,
                                             field_generations,
                                             &adstack_stats_));
  }
  // Slices per thread id and SIMD lane, or rows for the iterations that
  // pass the task's gate (tasks in lanes keep their threads' slices); over
  // budget, fewer threads run.
  const int64_t budget = adstack::AdStackBudget(
      config_, adstack::HeapMemory::kHostRam, PhysicalMemory());
  const int64_t slots = StackSlots(kernel, task);
  if (lanes == 1) {
    QD_RETURN_IF_ERROR(compiled.sizer->GateHeap(
        config_, kernel, task, *snodes_, runtime_.root, ctx, args,
        field_generations, slots, adstack_layout_.stride, budget,
        &adstack_layout_, &adstack_stats_));
  }
  adstack::CheckpointWithinBudget(config_, kernel, task, slots, budget,
                                  &adstack_layout_);
  const int64_t rows = adstack_layout_.rows;
  int64_t threads = slots;
  if (rows == 0) {
    QD_ASSIGN_OR_RETURN(threads, adstack::ThreadsWithinBudget(
                                     kernel, task, adstack_layout_, slots,
                                     lanes, budget));
  }
  adstack_threads_ = static_cast<int>(threads / lanes);
  adstack_stats_.budget_bytes = budget;
  const int64_t need = adstack_layout_.stride * (rows > 0 ? rows : threads);
  if (need > adstack_stats_.heap_bytes) {
    const int64_t grown = std::max(need, 2 * adstack_stats_.heap_bytes);
    adstack_heap_ = std::make_unique<char[]>(grown);
    adstack_stats_.heap_bytes = grown;
    ++adstack_stats_.heap_grows;
  }
  runtime_.adstack_heap = adstack_heap_.get();
  runtime_.adstack_per_thread_stride = adstack_layout_.stride;
  runtime_.adstack_threads = rows > 0 ? rows : threads;
  runtime_.adstack_rows = rows;
  runtime_.adstack_rows_claimed = 0;
  runtime_.adstack_offsets = adstack_layout_.offsets.data();
  runtime_.adstack_max_sizes = adstack_layout_.capacities.data();
  runtime_.adstack_overflow = 0;
  adstack::RecordLayout(adstack_layout_, task, kernel.num_tasks(), threads,
                        &adstack_stats_);
  return absl::OkStatus();
}

void CpuBackend::CheckAdStackOverflow(int task) {
  absl::optional<RuntimeErrorRecord> overflow =
      llvm_runtime::TakeAdStackOverflow(&runtime_, task,
                                        adstack_layout_.capacities, launches_);
  if (overflow && !pending_)
    pending_ = overflow;
}

absl::StatusOr<BackendLaunchStats> CpuBackend::Launch(
    const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations,
    const LaunchOptions& options) {
  // Graphs would save launch overhead the CPU does not have: plain launch.
  const auto& compiled = static_cast<const CpuCompiledKernel&>(kernel);
  QdLaunchContext ctx;
  ++launches_;
  QD_RETURN_IF_ERROR(llvm_runtime::FillLaunchContext(
      kernel, args, &runtime_,
      host::LaunchRandomKey(config_.random_seed, launches_), launches_,
      &ctx));
  QD_RETURN_IF_ERROR(prints_.Prepare(kernel, &runtime_));
  std::vector<absl::optional<adstack::AdStackLayout>> sized;
  if (kernel.has_checkpointed_variant()) {
    QD_ASSIGN_OR_RETURN(
        const bool over,
        SizeBeforeRunning(kernel, ctx, args, field_generations, &sized));
    if (over)
      return LaunchCheckpointedVariant(kernel, args, field_generations, options);
  }
  BackendLaunchStats stats;
  stats.launch_id = launches_;
  bool any_stacks = false;
  for (size_t t = 0; t < compiled.tasks().size(); ++t) {
    const CpuTask& task = compiled.tasks()[t];
    const auto& stacks = compiled.task_adstacks()[t];
    if (!stacks.empty()) {
      if (!any_stacks) {
        // This launch's numbers replace the last ones; tasks without stacks
        // report none.
        adstack::BeginLaunchStats(static_cast<int>(compiled.tasks().size()),
                                  &adstack_stats_);
      }
      any_stacks = true;
      QD_RETURN_IF_ERROR(PublishAdStacks(
          kernel, static_cast<int>(t), ctx, args, field_generations,
          sized.empty() || !sized[t] ? nullptr : &*sized[t]));
    }
    ++stats.tasks;
    int64_t range[2] = {0, 1};
    switch (task.kind) {
      case ir::TaskKind::kSerial:
        task.run(&ctx, 0, 1, 0);
        if (!stacks.empty())
          CheckAdStackOverflow(static_cast<int>(t));
        continue;
      case ir::TaskKind::kRangeFor:
        task.bounds(&ctx, range);
        break;
      case ir::TaskKind::kStructFor:
        range[1] = task.cells;
        break;
    }
    pool_.ParallelFor(
        range[0], range[1],
        [&](int64_t begin, int64_t end, int thread) {
          task.run(&ctx, begin, end, thread);
        },
        task.lanes, stacks.empty() ? 0 : adstack_threads_);
    stats.max_threads_used =
        std::max(stats.max_threads_used, pool_.threads_used_last());
    if (!stacks.empty())
      CheckAdStackOverflow(static_cast<int>(t));
  }
  if (any_stacks) {
    adstack_stats_.capacities.resize(compiled.tasks().size());
    adstack_stats_.per_thread_stride.resize(compiled.tasks().size());
  }
  return stats;
}

PrintBatch CpuBackend::TakePrints() {
  return prints_.Take(&runtime_);
}

absl::optional<RuntimeErrorRecord> CpuBackend::TakeError() {
  if (pending_) {
    absl::optional<RuntimeErrorRecord> record = pending_;
    pending_.reset();
    runtime_.error_code = QD_ERROR_NONE;
    return record;
  }
  return llvm_runtime::TakeRecordedError(&runtime_);
}

}  // namespace quadrants::cpu
