#include "quadrants/codegen/spirv/compiler_identity.h"
#include "quadrants/runtime/host/launch_random.h"
#include "quadrants/runtime/vulkan/vulkan_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/codegen/spirv/msl_export.h"
#include "quadrants/codegen/spirv/sizer_bytecode.h"
#include "quadrants/codegen/spirv/sizer_shader.h"
#include "quadrants/codegen/spirv/spirv_tools.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/options.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/adstack/launch_sizer.h"
#include "quadrants/runtime/vulkan/vulkan_pipeline.h"

namespace quadrants::vulkan {
namespace abi = codegen::spirv::abi;

// A task's pipelines: its own and, for a range_for, its bounds shader's.
struct VulkanTask {
  ir::TaskKind kind = ir::TaskKind::kSerial;
  int64_t cells = 0;
  // Invocations per workgroup: the shader's local size.
  int64_t block = codegen::spirv::abi::kBlockSize;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipeline bounds = VK_NULL_HANDLE;
};

namespace {

static_assert(codegen::spirv::abi::kMaxNdim == ir::kMaxAxes,
              "the launch context holds every axis of an ndarray");

using options::EnvFlag;
using options::Option;

// The directory `dir_option` names (or its default), announced on stderr
// the first time something is written there.
std::string DumpDirectory(Option dir_option, const char* what) {
  std::string dir = options::EnvString(dir_option);
  static std::mutex mutex;
  static std::map<std::string, bool> announced;
  std::lock_guard<std::mutex> lock(mutex);
  if (!announced[dir]) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    std::cerr << "[quadrants] " << what << ": writing to " << dir << std::endl;
    announced[dir] = true;
  }
  return dir;
}

// One process-wide device per set of feature overrides: a Program per
// qd.init() reuses it instead of creating an instance and device again.
absl::StatusOr<std::shared_ptr<VulkanDevice>> SharedDevice(
    const FeatureOverrides& overrides) {
  static std::mutex mutex;
  // Never destroyed: buffers and pipelines of a Program that outlives
  // static destruction would otherwise reach a destroyed device.
  static auto* devices =
      new std::map<std::tuple<bool, bool, bool, bool, bool>,
                   std::shared_ptr<VulkanDevice>>();
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(
      overrides.no_int64_atomics, overrides.no_float_atomics,
      overrides.no_float64, overrides.force_staging, overrides.no_subgroup_ops);
  auto it = devices->find(key);
  if (it != devices->end())
    return it->second;
  QD_ASSIGN_OR_RETURN(std::unique_ptr<VulkanDevice> created,
                      VulkanDevice::Create(overrides));
  std::shared_ptr<VulkanDevice> device = std::move(created);
  (*devices)[key] = device;
  return device;
}

void Put64(char* base, uint32_t offset, uint64_t value) {
  std::memcpy(base + offset, &value, 8);
}

}  // namespace

// A kernel's pipelines; destroyed with the kernel, once no queued launch
// records them.
struct PipelineSet {
  std::shared_ptr<VulkanDevice> device;
  std::weak_ptr<VulkanStream> stream;
  std::vector<VulkanTask> tasks;
  ~PipelineSet() {
    if (std::shared_ptr<VulkanStream> queued = stream.lock())
      (void)queued->Drain();
    for (const VulkanTask& task : tasks) {
      if (task.pipeline != VK_NULL_HANDLE)
        device->api().vkDestroyPipeline(device->device(), task.pipeline,
                                        nullptr);
      if (task.bounds != VK_NULL_HANDLE)
        device->api().vkDestroyPipeline(device->device(), task.bounds, nullptr);
    }
  }
};

namespace {

class VulkanCompiledKernel : public CompiledKernel {
 public:
  explicit VulkanCompiledKernel(CompiledKernelData artifact,
                       std::shared_ptr<PipelineSet> pipelines)
      : CompiledKernel(std::move(artifact)),
        pipelines_(std::move(pipelines)),
        sizer(std::make_unique<adstack::LaunchSizer>(this->task_adstacks())) {
    // Records follow each other in task order, as the code generator
    // placed them.
    for (const auto& stacks : this->task_adstacks()) {
      record_offsets.push_back(record_bytes);
      if (!stacks.empty())
        record_bytes +=
            abi::AdRecordBytes(static_cast<uint32_t>(stacks.size()));
    }
  }
  const std::vector<VulkanTask>& tasks() const { return pipelines_->tasks; }

 private:
  std::shared_ptr<PipelineSet> pipelines_;

 public:
  // Sizes the tasks' adstacks at launch (its caches change per launch).
  mutable std::unique_ptr<adstack::LaunchSizer> sizer;
  std::vector<uint32_t> record_offsets;  // per task
  uint32_t record_bytes = 0;
  // Per task: the sizer shader's bytecode, empty where the host sizes it.
  std::vector<std::vector<int64_t>> sizer_programs;
  // Per task: whether its size expressions read a field or ndarray the
  // kernel writes (then earlier tasks must finish before it is sized on
  // the host); computed at the first launch.
  mutable std::vector<bool> sizes_from_own_writes;
};

// Whether `expr` reads a field place in `snodes` or the data of an ndarray
// argument in `args`.
bool ReadsAny(const ir::SizeExpr& expr, const std::vector<int>& snodes,
              const std::vector<int>& args) {
  auto has = [](const std::vector<int>& list, int v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  if (expr.kind() == ir::SizeExprKind::kFieldLoad &&
      has(snodes, expr.snode_id()))
    return true;
  if (expr.kind() == ir::SizeExprKind::kNdarrayRead && has(args, expr.arg()))
    return true;
  for (const auto& child : expr.children()) {
    if (ReadsAny(*child, snodes, args))
      return true;
  }
  return false;
}

// The capacities a sizer run wrote, nullopt when the device cut it short
// (the host then sizes the task), or the error of a walk past the guard.
absl::StatusOr<absl::optional<std::vector<int64_t>>> SizerCapacities(
    const CompiledKernel& kernel, int task, const SizerResult& result,
    std::vector<int64_t> capacities) {
  if (result.outcome == codegen::spirv::sizer::kDone)
    return absl::optional<std::vector<int64_t>>(std::move(capacities));
  if (result.outcome != codegen::spirv::sizer::kGuardHit)
    return absl::optional<std::vector<int64_t>>();
  const auto& stacks = kernel.task_adstacks()[task];
  const std::string loop =
      result.stack >= 0 && result.stack < static_cast<int64_t>(stacks.size())
          ? stacks[result.stack].loc.ToString()
          : "?";
  return MakeError(
      ErrorKind::kRuntime,
      absl::StrCat("kernel '", kernel.name(),
                   "': sizing the adstack of the loop at ", loop,
                   " on the device: adstack sizing needs ", result.iterations,
                   " serial iterations, which exceeds the ",
                   codegen::spirv::sizer::kMaxIterations, " (1 << 24) guard"));
}

// The shader lays the stacks out as the host does; a difference is a bug
// that would put stacks on top of each other.
absl::Status CheckSizerLayout(const CompiledKernel& kernel, size_t task,
                              const SizerResult& ran,
                              const adstack::AdStackLayout& layout) {
  if (ran.outcome != codegen::spirv::sizer::kDone ||
      (ran.float_stride == layout.float_stride() &&
       ran.int_stride == layout.int_stride))
    return absl::OkStatus();
  return MakeError(
      ErrorKind::kRuntime,
      absl::StrCat("kernel '", kernel.name(), "' task ", task,
                   ": the adstack sizer shader laid out ", ran.float_stride,
                   "/", ran.int_stride, " bytes per invocation, the host ",
                   layout.float_stride(), "/", layout.int_stride));
}

std::string TaskName(const std::string& kernel, size_t task,
                     const CompiledTask& lowered, bool bounds) {
  return absl::StrCat("kernel '", kernel, "' task ", task, " (",
                      ir::TaskKindName(lowered.kind), bounds ? " bounds" : "",
                      " at ", lowered.loc.ToString(), ")");
}

// The file name (without extension) for a task's module under `dir`,
// unique within the process.
std::string DumpPath(const std::string& dir, const std::string& kernel,
                     size_t task, bool bounds) {
  const std::string stem =
      absl::StrCat(kernel, "_task", task, bounds ? "_bounds" : "");
  static std::mutex mutex;
  static std::map<std::string, int> counts;
  std::lock_guard<std::mutex> lock(mutex);
  const int n = counts[dir + "/" + stem]++;
  return absl::StrCat(dir, "/", stem, n == 0 ? "" : absl::StrCat("_", n));
}

// What QD_VALIDATE_SPIRV / debug and QD_DUMP_SPIRV ask for, on every module
// a kernel runs (freshly generated or from the cache).
absl::Status Inspect(const std::string& kernel, size_t task, bool bounds,
                     const std::vector<uint32_t>& words,
                     const std::string& what, bool validate) {
  if (validate)
    QD_RETURN_IF_ERROR(codegen::spirv::ValidateModule(words, what));
  if (EnvFlag(Option::kDumpSpirv)) {
    const std::string dir =
        DumpDirectory(Option::kDumpSpirvDir, "QD_DUMP_SPIRV");
    std::ofstream(DumpPath(dir, kernel, task, bounds) + ".spv",
                  std::ios::binary)
        .write(reinterpret_cast<const char*>(words.data()), 4 * words.size());
  }
  return absl::OkStatus();
}

// QD_DUMP_MSL: the kernel lowered for Metal's capabilities (no 64-bit or
// float atomics), not optimized (SPIRV-Tools would inline the atomic helper
// functions SPIRV-Cross needs), and cross-compiled to MSL, one file per
// shader; a failure is written next to them and reported on stderr.
void ExportMsl(const ir::Kernel& kernel, const ir::SNodeTree& snodes,
               codegen::spirv::CodegenOptions options, bool validate) {
  const std::string dir = DumpDirectory(Option::kDumpMslDir, "QD_DUMP_MSL");
  options.caps = codegen::spirv::DeviceCaps::Metal();
  absl::StatusOr<codegen::spirv::SpirvKernel> spirv =
      codegen::spirv::GenerateSpirv(kernel, snodes, options);
  if (!spirv.ok()) {
    std::ofstream(DumpPath(dir, kernel.name(), 0, false) + ".msl_error")
        << spirv.status().message() << "\n";
    std::cerr << "[quadrants] QD_DUMP_MSL: no MSL for kernel '" << kernel.name()
              << "': " << spirv.status().message() << std::endl;
    return;
  }
  for (size_t t = 0; t < spirv->tasks.size(); ++t) {
    for (bool bounds : {false, true}) {
      const auto& words =
          bounds ? spirv->tasks[t].bounds_code : spirv->tasks[t].code;
      if (words.empty())
        continue;
      const std::string path = DumpPath(dir, kernel.name(), t, bounds);
      const std::string what = absl::StrCat(
          "kernel '", kernel.name(), "' task ", t, bounds ? " bounds" : "");
      absl::Status valid =
          validate ? codegen::spirv::ValidateModule(words, what) : absl::OkStatus();
      absl::StatusOr<std::string> msl =
          valid.ok() ? codegen::spirv::CrossCompileToMsl(words)
                     : absl::StatusOr<std::string>(valid);
      if (msl.ok()) {
        std::ofstream(path + ".metal") << *msl;
      } else {
        std::ofstream(path + ".msl_error") << msl.status().message() << "\n";
        std::cerr << "[quadrants] QD_DUMP_MSL: no MSL for " << what << ": "
                  << msl.status().message() << std::endl;
      }
    }
  }
}

}  // namespace

absl::Status VulkanBackend::Probe() {
  return SharedDevice(FeatureOverrides()).status();
}

absl::StatusOr<std::unique_ptr<VulkanBackend>> VulkanBackend::Create(
    const CompileConfig& config) {
  if (config.device_id != 0) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("device_id ", config.device_id,
                                  " names no device: the vulkan backend runs "
                                  "on the first suitable device, device_id 0"));
  }
  QD_ASSIGN_OR_RETURN(std::shared_ptr<VulkanDevice> device,
                      SharedDevice(FeatureOverrides::FromEnvironment()));
  auto backend = std::make_unique<VulkanBackend>(config, device);
  QD_ASSIGN_OR_RETURN(backend->sizer_mode_, SizerModeFromEnvironment());
  QD_ASSIGN_OR_RETURN(backend->layout_, CreatePipelineLayout(*device));
  QD_RETURN_IF_ERROR(
      CreateCommands(*device, &backend->commands_, &backend->fence_));
  QD_ASSIGN_OR_RETURN(backend->runtime_,
                      CreateBuffer(*device, abi::kRtBytes, false));
  QD_ASSIGN_OR_RETURN(backend->context_,
                      CreateBuffer(*device, abi::kCtxBytes, false));
  QD_ASSIGN_OR_RETURN(std::unique_ptr<VulkanStream> stream,
                      VulkanStream::Create(device));
  backend->stream_ = std::move(stream);
  std::weak_ptr<VulkanStream> queue = backend->stream_;
  backend->memory_->set_drain([queue] {
    std::shared_ptr<VulkanStream> stream = queue.lock();
    return stream ? stream->Drain() : absl::OkStatus();
  });
  return backend;
}

VulkanBackend::VulkanBackend(const CompileConfig& config,
                             std::shared_ptr<VulkanDevice> device)
    : config_(config),
      device_(std::move(device)),
      memory_(std::make_shared<VulkanMemory>(device_)),
      adstacks_(device_),
      cache_(offline_cache::OpenOfflineCache(config, codegen::spirv::CompilerIdentity(),
                                          &cache_stats_)) {}

VulkanBackend::~VulkanBackend() {
  const VulkanApi& api = device_->api();
  VkDevice d = device_->device();
  // Arrays may outlive the backend; their host access then has no queue
  // to drain.
  memory_->set_drain(nullptr);
  stream_.reset();
  api.vkDeviceWaitIdle(d);
  for (VulkanBuffer* buffer : {&runtime_, &context_, &bounds_, &prints_})
    DestroyBuffer(*device_, buffer);
  DestroyCommands(*device_, &commands_, &fence_);
  if (layout_ != VK_NULL_HANDLE)
    api.vkDestroyPipelineLayout(d, layout_, nullptr);
}

Backend::SimtLimits VulkanBackend::simt_limits() const {
  return {device_->subgroup_size(), device_->max_shared_bytes()};
}

std::vector<std::pair<std::string, int64_t>>
VulkanBackend::device_capabilities() const {
  const codegen::spirv::DeviceCaps& caps = device_->caps();
  return {{"spirv_version", 0x10500},
          {"spirv_has_int8", caps.int8},
          {"spirv_has_int16", caps.int16},
          {"spirv_has_int64", 1},
          {"spirv_has_float16", caps.float16},
          {"spirv_has_float64", caps.float64},
          {"spirv_has_atomic_int64", caps.int64_atomics},
          {"spirv_has_atomic_float_add", caps.float32_atomic_add},
          {"spirv_has_atomic_float64_add", caps.float64_atomic_add},
          // f16 atomics are compare-and-swap loops on the enclosing 32-bit
          // word, so they work wherever f16 does.
          {"spirv_has_atomic_float16", caps.float16},
          {"spirv_has_physical_storage_buffer", 1},
          {"spirv_has_subgroup_basic", device_->subgroup_size() > 0},
          {"spirv_has_subgroup_arithmetic", caps.subgroup_arithmetic},
          {"spirv_subgroup_size", device_->subgroup_size()}};
}

int VulkanBackend::num_threads() const {
  return static_cast<int>(abi::kBlockSize * device_->max_groups());
}

codegen::spirv::CodegenOptions VulkanBackend::CodegenOptions() const {
  codegen::spirv::CodegenOptions options;
  options.caps = device_->caps();
  options.check_out_of_bound = config_.checks_bounds();
  options.debug = config_.debug;
  options.adstack_size_forced = config_.ad_stack_size > 0;
  return options;
}

absl::StatusOr<CompiledKernelData> VulkanBackend::Generate(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  QD_ASSIGN_OR_RETURN(
      codegen::spirv::SpirvKernel kernel,
      codegen::spirv::GenerateSpirv(offloaded, snodes, CodegenOptions()));
  // Release builds run SPIRV-Tools' performance passes; debug keeps the
  // emitted code as it is.
  if (!config_.debug) {
    for (size_t t = 0; t < kernel.tasks.size(); ++t) {
      auto& task = kernel.tasks[t];
      const std::string what =
          absl::StrCat("kernel '", offloaded.name(), "' task ", t);
      QD_ASSIGN_OR_RETURN(task.code, codegen::spirv::OptimizeModule(task.code, what));
      if (!task.bounds_code.empty()) {
        QD_ASSIGN_OR_RETURN(task.bounds_code,
                            codegen::spirv::OptimizeModule(task.bounds_code, what));
      }
    }
  }
  CompiledKernelData artifact = std::move(kernel.data);
  artifact.binary = codegen::spirv::PackModules(kernel.tasks);
  return artifact;
}

absl::StatusOr<std::shared_ptr<PipelineSet>> VulkanBackend::LoadPipelines(
    const CompiledKernelData& artifact) {
  const std::string& name = artifact.facts.kernel_name;
  const bool validate = config_.debug || EnvFlag(Option::kValidateSpirv);
  QD_ASSIGN_OR_RETURN(
      std::vector<codegen::spirv::SpirvTask> modules,
      codegen::spirv::UnpackModules(artifact.binary, artifact.tasks.size()));
  auto set = std::make_shared<PipelineSet>();
  set->device = device_;
  set->stream = stream_;
  for (size_t t = 0; t < artifact.tasks.size(); ++t) {
    const CompiledTask& lowered = artifact.tasks[t];
    VulkanTask task;
    task.kind = lowered.kind;
    task.cells = lowered.struct_for_cells;
    if (lowered.block_dim > 0)
      task.block = lowered.block_dim;
    const std::string what = TaskName(name, t, lowered, false);
    QD_RETURN_IF_ERROR(Inspect(name, t, false, modules[t].code, what, validate));
    QD_ASSIGN_OR_RETURN(task.pipeline, CreatePipeline(*device_, layout_,
                                                      modules[t].code, what));
    set->tasks.push_back(task);
    if (lowered.kind == ir::TaskKind::kRangeFor) {
      if (modules[t].bounds_code.empty())
        return absl::DataLossError("a range_for task without bounds");
      const std::string bounds = TaskName(name, t, lowered, true);
      QD_RETURN_IF_ERROR(
          Inspect(name, t, true, modules[t].bounds_code, bounds, validate));
      QD_ASSIGN_OR_RETURN(
          set->tasks.back().bounds,
          CreatePipeline(*device_, layout_, modules[t].bounds_code, bounds));
    }
  }
  return set;
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> VulkanBackend::Compile(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  std::string key;
  if (cache_) {
    key = cache_->Key(
        offloaded, snodes,
        absl::StrCat("spirv ", CodegenOptions().ToString(),
                     " optimized=", !config_.debug),
        absl::StrCat("vulkan ", device_->Description()));
  }
  QD_ASSIGN_OR_RETURN(
      auto generated,
      (offline_cache::LoadOrGenerate<std::shared_ptr<PipelineSet>>(
          cache_ ? &*cache_ : nullptr, key, &cache_stats_,
          [&] { return Generate(offloaded, snodes); },
          [&](const CompiledKernelData& artifact) {
            return LoadPipelines(artifact);
          })));
  if (EnvFlag(Option::kDumpMsl)) {
    const bool validate = config_.debug || EnvFlag(Option::kValidateSpirv);
    ExportMsl(offloaded, snodes, CodegenOptions(), validate);
  }
  return Instantiate(key, std::move(generated.first),
                     std::move(generated.second), snodes);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> VulkanBackend::LoadCached(
    const std::string& key, const ir::SNodeTree& snodes) {
  auto hit = offline_cache::LoadExisting<std::shared_ptr<PipelineSet>>(
      cache_ ? &*cache_ : nullptr, key, &cache_stats_,
      [&](const CompiledKernelData& artifact) {
        return LoadPipelines(artifact);
      });
  if (!hit)
    return std::shared_ptr<CompiledKernel>();
  return Instantiate(key, std::move(hit->first), std::move(hit->second),
                     snodes);
}

std::shared_ptr<CompiledKernel> VulkanBackend::Instantiate(
    const std::string& key, CompiledKernelData artifact,
    std::shared_ptr<PipelineSet> pipelines, const ir::SNodeTree& snodes) {
  snodes_ = &snodes;
  auto compiled = std::make_shared<VulkanCompiledKernel>(std::move(artifact),
                                                         std::move(pipelines));
  compiled->set_cache_key(key);
  compiled->sizer->set_memory(memory_.get());
  compiled->sizer_programs =
      SizerPrograms(compiled->task_adstacks(), snodes, compiled->params(),
                    config_, sizer_mode_);
  return compiled;
}

absl::Status VulkanBackend::EnsureBounds(int tasks) {
  const int64_t need = std::max(1, tasks) * int64_t{abi::kRangeBytes};
  if (bounds_.buffer != VK_NULL_HANDLE && bounds_.bytes >= need)
    return absl::OkStatus();
  QD_RETURN_IF_ERROR(stream_->Drain());
  DestroyBuffer(*device_, &bounds_);
  QD_ASSIGN_OR_RETURN(bounds_, CreateBuffer(*device_, need, false));
  return absl::OkStatus();
}

absl::StatusOr<VulkanSizer*> VulkanBackend::Sizer() {
  if (sizer_ == nullptr) {
    QD_ASSIGN_OR_RETURN(sizer_, VulkanSizer::Create(device_, layout_));
  }
  return sizer_.get();
}

absl::StatusOr<adstack::MaxReducer*> VulkanBackend::Reducer() {
  if (!host_reducer_) {
    VulkanMemory* memory = memory_.get();
    host_reducer_ = std::make_unique<HostViewReducer>(
        [memory] { return memory->RefreshHostCopies(); },
        std::make_unique<host::HostMaxReducer>());
  }
  if (sizer_mode_ == SizerMode::kHost)
    return host_reducer_.get();
  if (!device_reducer_) {
    VulkanMemory* memory = memory_.get();
    QD_ASSIGN_OR_RETURN(device_reducer_, VulkanMaxReducer::Create(
                                             device_,
                                             [memory](const void* p) {
                                               return memory->DeviceAddress(p);
                                             },
                                             host_reducer_.get()));
  }
  return device_reducer_.get();
}

absl::Status VulkanBackend::EnsurePrintBuffer(int64_t bytes) {
  if (prints_.buffer != VK_NULL_HANDLE && prints_.bytes >= bytes)
    return absl::OkStatus();
  DestroyBuffer(*device_, &prints_);
  QD_ASSIGN_OR_RETURN(prints_, CreateBuffer(*device_, bytes, false));
  print_capacity_ = bytes;
  return absl::OkStatus();
}

absl::Status VulkanBackend::FillContext(
    char* ctx, const CompiledKernel& kernel,
    absl::Span<const ResolvedArgument> args) {
  std::memset(ctx, 0, abi::kCtxBytes);
  Put64(ctx, abi::kCtxRuntime, runtime_.address);
  Put64(ctx, abi::kCtxRandomKey,
        host::LaunchRandomKey(config_.random_seed, ++launches_));
  Put64(ctx, abi::kCtxBounds, bounds_.address);
  Put64(ctx, abi::kCtxMaxGroups, device_->max_groups());
  if (args.size() > abi::kMaxArgs) {
    return MakeError(
        ErrorKind::kType,
        absl::StrCat("kernel '", kernel.name(), "' has ", args.size(),
                     " arguments; at most ", abi::kMaxArgs, " are supported"));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::KernelParam& param = kernel.params()[i];
    Put64(ctx, abi::kCtxArgs + 8 * i, static_cast<uint64_t>(args[i].slot));
    if (param.kind != ir::KernelParam::Kind::kNdarray)
      continue;
    const uint64_t address =
        args[i].data == nullptr ? 0 : memory_->DeviceAddress(args[i].data);
    if (address == 0 && args[i].data != nullptr) {
      return MakeError(
          ErrorKind::kRuntime,
          absl::StrCat("kernel '", kernel.name(), "' argument ", i, " ('",
                       param.name,
                       "') is not in memory the Vulkan device can address"));
    }
    Put64(ctx, abi::kCtxNdarrayData + 8 * i, address);
    if (args[i].shape.size() > abi::kMaxNdim) {
      return MakeError(
          ErrorKind::kType,
          absl::StrCat("kernel '", kernel.name(), "' argument ", i,
                       " has more than ", abi::kMaxNdim, " dimensions"));
    }
    for (size_t axis = 0; axis < args[i].shape.size(); ++axis) {
      Put64(ctx, abi::kCtxNdarrayShape + 8 * (abi::kMaxNdim * i + axis),
            static_cast<uint64_t>(args[i].shape[axis]));
    }
  }
  return absl::OkStatus();
}

void VulkanBackend::RecordTask(VkCommandBuffer cmd, const VulkanTask& task,
                               size_t t, int64_t groups, uint64_t ctx_address,
                               BackendLaunchStats* stats) {
  const VulkanApi& api = device_->api();
  auto barrier = [&](VkPipelineStageFlags src, VkAccessFlags src_access,
                     VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    RecordBarrier(*device_, cmd, src, src_access, dst, dst_access);
  };
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkAccessFlags shader_rw =
      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  ++stats->tasks;
  switch (task.kind) {
    case ir::TaskKind::kSerial:
      api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                            task.pipeline);
      api.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8,
                             &ctx_address);
      api.vkCmdDispatch(cmd, 1, 1, 1);
      break;
    case ir::TaskKind::kRangeFor:
      // The range (and the dispatch size) come from the bounds shader.
      api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, task.bounds);
      api.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8,
                             &ctx_address);
      api.vkCmdDispatch(cmd, 1, 1, 1);
      barrier(compute, VK_ACCESS_SHADER_WRITE_BIT,
              compute | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
              shader_rw | VK_ACCESS_INDIRECT_COMMAND_READ_BIT);
      api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                            task.pipeline);
      api.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8,
                             &ctx_address);
      api.vkCmdDispatchIndirect(
          cmd, bounds_.buffer,
          kGuardBytes + t * abi::kRangeBytes + abi::kRangeDispatch);
      break;
    case ir::TaskKind::kStructFor: {
      if (groups == 0)
        break;
      api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                            task.pipeline);
      api.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8,
                             &ctx_address);
      api.vkCmdDispatch(cmd, static_cast<uint32_t>(groups), 1, 1);
      stats->max_threads_used = std::max<int>(
          stats->max_threads_used, static_cast<int>(std::min<int64_t>(
                                      task.cells, groups * task.block)));
      break;
    }
  }
}

bool VulkanBackend::Queueable(const CompiledKernel& kernel) const {
  if (!kernel.print_sites().empty() || !kernel.error_sites().empty())
    return false;
  for (const auto& stacks : kernel.task_adstacks()) {
    if (!stacks.empty())
      return false;
  }
  return true;
}

int64_t VulkanBackend::TaskGroups(const VulkanTask& task) const {
  const int64_t groups = device_->max_groups();
  if (task.kind != ir::TaskKind::kStructFor)
    return groups;
  return std::min<int64_t>((task.cells + task.block - 1) / task.block, groups);
}

absl::StatusOr<BackendLaunchStats> VulkanBackend::Queue(
    const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args) {
  const auto& compiled = static_cast<const VulkanCompiledKernel&>(kernel);
  QD_RETURN_IF_ERROR(EnsureBounds(kernel.num_tasks()));
  // Queued launches read the root from the runtime record when they run.
  const uint64_t root = root_ == nullptr ? 0 : memory_->DeviceAddress(root_);
  if (root != published_root_) {
    QD_RETURN_IF_ERROR(stream_->Drain());
    Put64(runtime_.host, abi::kRtRoot, root);
    published_root_ = root;
  }
  QD_ASSIGN_OR_RETURN(VulkanStream::Slot slot, stream_->Next());
  QD_RETURN_IF_ERROR(FillContext(slot.context, kernel, args));
  BackendLaunchStats stats;
  for (size_t t = 0; t < compiled.tasks().size(); ++t) {
    if (t > 0) {
      RecordBarrier(*device_, slot.commands,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    }
    const VulkanTask& task = compiled.tasks()[t];
    RecordTask(slot.commands, task, t, TaskGroups(task), slot.context_address,
               &stats);
  }
  QD_RETURN_IF_ERROR(stream_->Commit());
  stats.batched = true;
  return stats;
}

absl::StatusOr<BackendLaunchStats> VulkanBackend::Launch(
    const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations,
    const LaunchOptions& /*options*/) {
  const auto& compiled = static_cast<const VulkanCompiledKernel&>(kernel);
  if (Queueable(kernel))
    return Queue(compiled, args);
  // What follows reads and writes records the queued launches may use.
  QD_RETURN_IF_ERROR(stream_->Drain());
  QD_RETURN_IF_ERROR(EnsureBounds(kernel.num_tasks()));
  if (!kernel.print_sites().empty()) {
    // A launch whose records did not fit makes the next buffer larger.
    int64_t want = std::max<int64_t>(print_capacity_, 1 << 20);
    if (print_overflowed_)
      want *= 4;
    print_overflowed_ = false;
    QD_RETURN_IF_ERROR(EnsurePrintBuffer(std::min<int64_t>(want, 1ll << 30)));
  }

  char* ctx = context_.host;
  QD_RETURN_IF_ERROR(FillContext(ctx, kernel, args));
  auto put64 = Put64;
  // The runtime record.
  char* rt = runtime_.host;
  published_root_ = root_ == nullptr ? 0 : memory_->DeviceAddress(root_);
  put64(rt, abi::kRtRoot, published_root_);
  put64(rt, abi::kRtPrintBuffer, prints_.address);
  const uint32_t capacity =
      kernel.print_sites().empty() ? 0 : static_cast<uint32_t>(prints_.bytes);
  const uint32_t zero = 0;
  std::memcpy(rt + abi::kRtPrintCapacity, &capacity, 4);
  std::memcpy(rt + abi::kRtPrintUsed, &zero, 4);
  std::memcpy(rt + abi::kRtPrintDropped, &zero, 4);

  // Adstack records and the host's view of the launch for sizing them.
  const auto& task_stacks = kernel.task_adstacks();
  const bool any_stacks =
      std::any_of(task_stacks.begin(), task_stacks.end(),
                  [](const auto& stacks) { return !stacks.empty(); });
  QdLaunchContext host_ctx{};
  std::vector<adstack::AdStackLayout> layouts(task_stacks.size());
  if (any_stacks) {
    QD_RETURN_IF_ERROR(adstacks_.EnsureRecords(compiled.record_bytes));
    put64(ctx, abi::kCtxAdStack, adstacks_.records_address());
    for (size_t i = 0; i < args.size(); ++i) {
      host_ctx.args[i] = args[i].slot;
      host_ctx.ndarray_data[i] = args[i].data;
      for (size_t axis = 0; axis < args[i].shape.size(); ++axis)
        host_ctx.ndarray_shape[i][axis] = args[i].shape[axis];
    }
    if (compiled.sizes_from_own_writes.empty()) {
      for (const auto& stacks : task_stacks) {
        bool reads = false;
        for (const AdStackSpec& stack : stacks) {
          reads = reads || (stack.size_expr &&
                            ReadsAny(*stack.size_expr, kernel.written_snodes(),
                                     kernel.written_args()));
        }
        compiled.sizes_from_own_writes.push_back(reads);
      }
    }
    // This launch's numbers replace the last ones; tasks without stacks
    // report none.
    adstack::BeginLaunchStats(static_cast<int>(task_stacks.size()),
                              &adstack_stats_);
    adstack_stats_.per_thread_stride.assign(task_stacks.size(), 0);
    adstack_stats_.gated_rows.assign(task_stacks.size(), 0);
  }

  // Command buffers: the tasks with barriers between them. One per
  // launch, unless a task's adstacks
  // are sized from values earlier tasks write or need larger heaps: the
  // work recorded so far then runs first.
  VkCommandBuffer cmd = commands_;
  auto barrier = [&](VkPipelineStageFlags src, VkAccessFlags src_access,
                     VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    RecordBarrier(*device_, cmd, src, src_access, dst, dst_access);
  };
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkAccessFlags shader_rw =
      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  bool recorded = false;  // dispatches since the command buffer began
  auto begin_commands = [&]() -> absl::Status {
    QD_RETURN_IF_ERROR(BeginCommands(*device_, cmd));
    recorded = false;
    return absl::OkStatus();
  };
  auto submit_commands = [&]() -> absl::Status {
    // Before the host's reads and every later submission's commands.
    barrier(compute, VK_ACCESS_SHADER_WRITE_BIT,
            compute | VK_PIPELINE_STAGE_TRANSFER_BIT |
                VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            shader_rw | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_HOST_READ_BIT);
    return SubmitAndWait(*device_, cmd, fence_);
  };
  QD_RETURN_IF_ERROR(begin_commands());
  const uint64_t ctx_address = context_.address;
  BackendLaunchStats stats;
  for (size_t t = 0; t < compiled.tasks().size(); ++t) {
    const VulkanTask& task = compiled.tasks()[t];
    const int64_t block = task.block;
    int64_t groups = TaskGroups(task);
    if (!task_stacks[t].empty()) {
      const std::vector<int64_t>& program = compiled.sizer_programs[t];
      // Captured MaxOverRanges go to the max-reducer before any walk,
      // so in auto mode the shader sizes only tasks the reducer takes none
      // of.
      const bool shader =
          !program.empty() &&
          (sizer_mode_ == SizerMode::kShader ||
           !compiled.sizer->Captures(kernel, static_cast<int>(t), *snodes_));
      if (recorded && compiled.sizes_from_own_writes[t] && !shader) {
        QD_RETURN_IF_ERROR(submit_commands());
        QD_RETURN_IF_ERROR(begin_commands());
      }
      QD_ASSIGN_OR_RETURN(adstack::MaxReducer * reducer, Reducer());
      compiled.sizer->set_reducer(reducer);
      // The sizer shader runs after the work recorded so far (so it reads
      // what earlier tasks wrote); the heaps are grown from what it wrote.
      absl::optional<SizerResult> ran;
      adstack::LaunchSizer::Evaluator on_device =
          [&]() -> absl::StatusOr<absl::optional<std::vector<int64_t>>> {
        QD_ASSIGN_OR_RETURN(VulkanSizer * sizer, Sizer());
        if (recorded)
          barrier(compute, VK_ACCESS_SHADER_WRITE_BIT, compute, shader_rw);
        QD_RETURN_IF_ERROR(sizer->Record(
            cmd, layout_, program, ctx_address,
            adstacks_.records_address() + compiled.record_offsets[t]));
        QD_RETURN_IF_ERROR(submit_commands());
        QD_RETURN_IF_ERROR(begin_commands());
        ++adstack_stats_.sizer_dispatches;
        ran = sizer->Result();
        return SizerCapacities(
            kernel, static_cast<int>(t), *ran,
            adstacks_.ReadCapacities(compiled.record_offsets[t],
                                     task_stacks[t].size()));
      };
      QD_ASSIGN_OR_RETURN(
          adstack::AdStackLayout sized,
          compiled.sizer->Size(config_, kernel, static_cast<int>(t), *snodes_,
                               root_, host_ctx, args, field_generations,
                               &adstack_stats_, shader ? &on_device : nullptr));
      // A struct_for needs no more invocations than cells.
      int64_t invocations = std::max<int64_t>(groups, 1) * block;
      if (task.kind == ir::TaskKind::kSerial)
        invocations = 1;
      else if (task.kind == ir::TaskKind::kStructFor)
        invocations = std::max<int64_t>(std::min(invocations, task.cells), 1);
      adstack_stats_.budget_bytes = adstack::AdStackBudget(
          config_, adstack::HeapMemory::kVulkanHeaps, 0);
      const adstack::AdStackLayout exact =
          adstack::LayOutByKind(task_stacks[t], sized.capacities);
      QD_RETURN_IF_ERROR(compiled.sizer->GateHeap(
          config_, kernel, static_cast<int>(t), *snodes_, root_, host_ctx,
          args, field_generations, invocations,
          exact.stride, adstack_stats_.budget_bytes,
          &sized, &adstack_stats_));
      QD_ASSIGN_OR_RETURN(
          layouts[t],
          adstacks_.Plan(kernel, static_cast<int>(t), sized.capacities,
                         invocations, adstack_stats_.budget_bytes,
                         config_.ad_stack_size > 0,
                         config_.ad_stack_segment_length, sized.rows));
      // Segmented loops change the layout the shader computed.
      const bool segmented =
          std::any_of(layouts[t].segments.begin(), layouts[t].segments.end(),
                      [](int64_t k) { return k > 0; });
      if (ran && !segmented)
        QD_RETURN_IF_ERROR(CheckSizerLayout(kernel, t, *ran, layouts[t]));
      if (recorded && adstacks_.NeedsGrowth(layouts[t])) {
        QD_RETURN_IF_ERROR(submit_commands());
        QD_RETURN_IF_ERROR(begin_commands());
      }
      QD_RETURN_IF_ERROR(adstacks_.Publish(
          layouts[t], compiled.record_offsets[t], &adstack_stats_));
      if (task.kind == ir::TaskKind::kStructFor) {
        groups = std::min(groups, (layouts[t].threads + block - 1) / block);
      }
      adstack::RecordLayout(layouts[t], static_cast<int>(t),
                            kernel.num_tasks(), layouts[t].threads,
                            &adstack_stats_);
    }
    if (recorded) {
      barrier(compute, VK_ACCESS_SHADER_WRITE_BIT, compute, shader_rw);
    }
    recorded = true;
    RecordTask(cmd, task, t, groups, ctx_address, &stats);
  }
  QD_RETURN_IF_ERROR(submit_commands());
  if (any_stacks) {
    if (absl::optional<RuntimeErrorRecord> overflow =
            TakeAdStackOverflow(layouts)) {
      if (!pending_)
        pending_ = overflow;
    }
  }

  // Errors and prints the kernel recorded.
  uint32_t code = 0;
  std::memcpy(&code, rt + abi::kRtErrorCode, 4);
  if (code != 0) {
    RuntimeErrorRecord record;
    record.code = static_cast<RuntimeErrorRecord::Code>(code);
    uint32_t site = 0;
    std::memcpy(&site, rt + abi::kRtErrorSite, 4);
    record.site = static_cast<int>(site);
    std::memcpy(record.values, rt + abi::kRtErrorValues, 24);
    if (!pending_)
      pending_ = record;
    std::memset(rt + abi::kRtErrorCode, 0, 4);
  }
  if (!kernel.print_sites().empty()) {
    uint32_t used = 0, dropped = 0;
    std::memcpy(&used, rt + abi::kRtPrintUsed, 4);
    std::memcpy(&dropped, rt + abi::kRtPrintDropped, 4);
    const int64_t valid = std::min<int64_t>(used, capacity);
    int64_t at = 0;
    while (at + 8 <= valid) {
      int32_t header[2];
      std::memcpy(header, prints_.host + at, 8);
      const int64_t bytes = 8 + 8 * int64_t{std::max(header[1], 0)};
      if (header[1] < 0 || at + bytes > valid)
        break;
      PrintRecord record;
      record.site = header[0];
      record.values.resize(header[1]);
      std::memcpy(record.values.data(), prints_.host + at + 8,
                  8 * record.values.size());
      pending_prints_.records.push_back(std::move(record));
      at += bytes;
    }
    pending_prints_.dropped += dropped;
    print_overflowed_ = dropped > 0;
  }
  return stats;
}

absl::optional<RuntimeErrorRecord> VulkanBackend::TakeAdStackOverflow(
    const std::vector<adstack::AdStackLayout>& layouts) {
  char* word = runtime_.host + abi::kRtAdStackOverflow;
  uint32_t signal = 0;
  std::memcpy(&signal, word, 4);
  if (signal == 0)
    return absl::nullopt;
  std::memset(word, 0, 4);
  const int task = static_cast<int>(signal >> 16);
  const int stack = static_cast<int>(signal & 0xffff) - 1;
  RuntimeErrorRecord record;
  record.code = RuntimeErrorRecord::Code::kAdStackOverflow;
  record.site = stack;
  record.values[0] = task;
  record.values[1] = stack;
  record.values[2] = 0;
  if (task < static_cast<int>(layouts.size()) && stack >= 0 &&
      stack < static_cast<int>(layouts[task].capacities.size())) {
    record.values[2] = layouts[task].capacities[stack];
  }
  return record;
}

absl::optional<RuntimeErrorRecord> VulkanBackend::TakeError() {
  absl::optional<RuntimeErrorRecord> record = pending_;
  pending_.reset();
  return record;
}

PrintBatch VulkanBackend::TakePrints() {
  PrintBatch batch = std::move(pending_prints_);
  pending_prints_ = PrintBatch();
  return batch;
}

}  // namespace quadrants::vulkan
