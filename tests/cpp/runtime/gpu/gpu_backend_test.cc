// The launch path CUDA and AMDGPU share, against a fake device whose memory
// is host memory and whose kernels are host callbacks: range resolution,
// adstack heap growth and metadata publication, with no GPU.
#include "quadrants/runtime/gpu/gpu_backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "quadrants/common/errors.h"
#include "quadrants/runtime/gpu/adstack_heap.h"

namespace quadrants::gpu {
namespace {

// An artifact whose tasks hold `stacks` (one entry per task).
// `artifact` with the launch facts of `kernel`.
CompiledKernelData Described(const ir::Kernel& kernel,
                             CompiledKernelData artifact) {
  artifact.facts = DescribeLaunch(kernel);
  return artifact;
}

CompiledKernelData Artifact(std::vector<std::vector<AdStackSpec>> stacks,
                            std::vector<ErrorSite> sites = {}) {
  CompiledKernelData artifact;
  for (std::vector<AdStackSpec>& task_stacks : stacks) {
    artifact.tasks.emplace_back();
    artifact.tasks.back().adstacks = std::move(task_stacks);
  }
  artifact.error_sites = std::move(sites);
  return artifact;
}

// A kernel of the fake device: what it does with its launch's parameters.
using FakeKernel = std::function<void(const KernelLaunch&)>;

class FakeDevice : public Device {
 public:
  absl::StatusOr<uint64_t> Allocate(int64_t bytes) override {
    if (fail_allocations)
      return absl::ResourceExhaustedError("fakeMalloc failed: out of memory");
    auto block = std::make_unique<char[]>(bytes);
    std::memset(block.get(), 0, bytes);
    const auto address = reinterpret_cast<uint64_t>(block.get());
    live[address] = std::move(block);
    sizes[address] = bytes;
    ++allocations;
    return address;
  }
  void Free(uint64_t address) override {
    live.erase(address);
    sizes.erase(address);
    ++frees;
  }
  absl::Status CopyToDevice(uint64_t address, const void* data,
                            int64_t bytes) override {
    EXPECT_TRUE(Holds(address, bytes));
    std::memcpy(reinterpret_cast<void*>(address), data, bytes);
    ++uploads;
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* data, uint64_t address,
                          int64_t bytes) override {
    EXPECT_TRUE(Holds(address, bytes));
    std::memcpy(data, reinterpret_cast<const void*>(address), bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToDeviceAsync(uint64_t address, const void* pinned,
                                 int64_t bytes) override {
    EXPECT_NE(PinnedBase(pinned), nullptr) << "async copies read pinned memory";
    return CopyToDevice(address, pinned, bytes);
  }
  absl::Status Zero(uint64_t address, int64_t bytes) override {
    EXPECT_TRUE(Holds(address, bytes));
    std::memset(reinterpret_cast<void*>(address), 0, bytes);
    return absl::OkStatus();
  }
  absl::StatusOr<void*> AllocatePinned(int64_t bytes) override {
    auto block = std::make_unique<char[]>(bytes);
    char* data = block.get();
    pinned[data] = std::move(block);
    pinned_sizes[data] = bytes;
    return data;
  }
  void FreePinned(void* data) override {
    pinned.erase(static_cast<char*>(data));
    pinned_sizes.erase(static_cast<char*>(data));
  }
  absl::Status Launch(const KernelLaunch& launch) override {
    launches.push_back(launch);
    (*static_cast<FakeKernel*>(launch.function))(launch);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override {
    ++syncs;
    return absl::OkStatus();
  }

  // Whether [address, address + bytes) lies in one live allocation.
  bool Holds(uint64_t address, int64_t bytes) const {
    for (const auto& [start, size] : sizes) {
      if (address >= start && address + bytes <= start + size)
        return true;
    }
    return false;
  }

  // The pinned block holding `p`, or null.
  const char* PinnedBase(const void* p) const {
    for (const auto& [start, size] : pinned_sizes) {
      if (static_cast<const char*>(p) >= start &&
          static_cast<const char*>(p) < start + size)
        return start;
    }
    return nullptr;
  }

  std::map<uint64_t, std::unique_ptr<char[]>> live;
  std::map<char*, std::unique_ptr<char[]>> pinned;
  std::map<char*, int64_t> pinned_sizes;
  std::map<uint64_t, int64_t> sizes;
  std::vector<KernelLaunch> launches;
  int allocations = 0, frees = 0, uploads = 0, syncs = 0;
  bool fail_allocations = false;
};

adstack::AdStackLayout Layout(int64_t stride, std::vector<int64_t> offsets,
                              std::vector<int64_t> capacities) {
  adstack::AdStackLayout layout;
  layout.stride = stride;
  layout.offsets = std::move(offsets);
  layout.capacities = std::move(capacities);
  return layout;
}

TEST(AdStackHeapTest, GrowsByDoublingAndPublishesChangedMetadataOnce) {
  auto device = std::make_shared<FakeDevice>();
  AdStackHeap heap(device, int64_t{1} << 20);
  QdRuntime runtime{};
  AdStackStats stats;
  const auto layout = Layout(64, {0, 32}, {3, 3});

  ASSERT_TRUE(heap.Publish(layout, 0, 1, 128, &runtime, &stats).ok());
  EXPECT_EQ(stats.heap_bytes, 64 * 128);
  EXPECT_EQ(stats.heap_grows, 1);
  EXPECT_TRUE(device->Holds(reinterpret_cast<uint64_t>(runtime.adstack_heap),
                            64 * 128));
  EXPECT_EQ(runtime.adstack_per_thread_stride, 64);
  EXPECT_EQ(runtime.adstack_threads, 128);
  // The kernels read offsets, then capacities, from device memory.
  EXPECT_EQ(runtime.adstack_offsets[1], 32);
  EXPECT_EQ(runtime.adstack_max_sizes[0], 3);
  EXPECT_EQ(runtime.adstack_max_sizes, runtime.adstack_offsets + 2);
  const int uploads = device->uploads;

  // Same layout, same threads: nothing allocated, nothing copied.
  ASSERT_TRUE(heap.Publish(layout, 0, 1, 128, &runtime, &stats).ok());
  EXPECT_EQ(stats.heap_grows, 1);
  EXPECT_EQ(device->uploads, uploads);

  // Twice the threads: the heap doubles.
  ASSERT_TRUE(heap.Publish(layout, 0, 1, 256, &runtime, &stats).ok());
  EXPECT_EQ(stats.heap_bytes, 2 * 64 * 128);
  EXPECT_EQ(stats.heap_grows, 2);
  // A little more: doubling again, not just the need.
  ASSERT_TRUE(heap.Publish(layout, 0, 1, 300, &runtime, &stats).ok());
  EXPECT_EQ(stats.heap_bytes, 4 * 64 * 128);
  EXPECT_EQ(stats.heap_grows, 3);
  EXPECT_EQ(device->uploads, uploads);
  // The old heaps were freed as the new ones came.
  EXPECT_EQ(device->allocations - device->frees, 2);  // heap and metadata

  // New capacities are uploaded.
  ASSERT_TRUE(
      heap.Publish(Layout(64, {0, 32}, {5, 3}), 0, 1, 300, &runtime, &stats)
          .ok());
  EXPECT_EQ(device->uploads, uploads + 1);
  EXPECT_EQ(runtime.adstack_max_sizes[0], 5);
  EXPECT_EQ(stats.capacities[0], (std::vector<int64_t>{5, 3}));
}

TEST(AdStackHeapTest, FailedGrowthLeavesNoStaleSize) {
  auto device = std::make_shared<FakeDevice>();
  AdStackHeap heap(device, int64_t{1} << 20);
  QdRuntime runtime{};
  AdStackStats stats;
  const auto layout = Layout(64, {0}, {4});
  ASSERT_TRUE(heap.Publish(layout, 0, 1, 16, &runtime, &stats).ok());
  device->fail_allocations = true;
  absl::Status grown = heap.Publish(layout, 0, 1, 1024, &runtime, &stats);
  EXPECT_FALSE(grown.ok());
  EXPECT_NE(grown.message().find("fakeMalloc"), absl::string_view::npos);
  EXPECT_EQ(stats.heap_bytes, 0);
  device->fail_allocations = false;
  ASSERT_TRUE(heap.Publish(layout, 0, 1, 1024, &runtime, &stats).ok());
  EXPECT_EQ(stats.heap_bytes, 64 * 1024);
}

TEST(AdStackHeapTest, FitGridLowersTheGridOrNamesTheKernelLoopAndBudget) {
  auto device = std::make_shared<FakeDevice>();
  AdStackHeap heap(device, 128 * 100 * 10);
  ir::Kernel ir_kernel("deep");
  AdStackSpec small, large;
  small.slot_bytes = 4;
  large.slot_bytes = 8;
  large.loc = SourceLocation{"sim.py", 12};
  GpuCompiledKernel kernel(Described(ir_kernel, Artifact({{}, {}, {small, large}})));
  AdStackStats stats;
  unsigned grid = 1000;
  ASSERT_TRUE(
      heap.FitGrid(kernel, 2, Layout(100, {0, 8}, {2, 11}), 128, &grid, &stats)
          .ok());
  EXPECT_EQ(grid, 10u);
  EXPECT_EQ(stats.budget_bytes, 128 * 100 * 10);
  absl::Status too_big = heap.FitGrid(
      kernel, 2, Layout(100000, {0, 8}, {2, 12000}), 128, &grid, &stats);
  EXPECT_EQ(GetErrorKind(too_big), ErrorKind::kRuntime);
  for (const char* part : {"kernel 'deep'", "loop at sim.py:12",
                           "100000 bytes per thread", "12800000 bytes",
                           "ad_stack_max_bytes"}) {
    EXPECT_NE(too_big.message().find(part), absl::string_view::npos) << part;
  }
}

// A GpuBackend over the fake device, running one prebuilt kernel.
class FakeBackend : public GpuBackend {
 public:
  FakeBackend(const CompileConfig& config, std::shared_ptr<FakeDevice> device)
      : GpuBackend(config, device, std::make_shared<HostMemoryAllocator>()) {
    set_snodes(&snodes_);
  }
  absl::Status Init() { return InitDevice(1024, int64_t{1} << 30); }
  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel&, const ir::SNodeTree&) override {
    return absl::UnimplementedError("prebuilt kernels only");
  }

 private:
  ir::SNodeTree snodes_;
};

TEST(GpuBackendTest, RangeTaskWithAdStacksReadsItsRangeAndSizesTheHeap) {
  auto device = std::make_shared<FakeDevice>();
  CompileConfig config;
  config.default_ad_stack_size = 7;
  FakeBackend backend(config, device);
  ASSERT_TRUE(backend.Init().ok());

  // The bounds kernel writes [3, 1003) where the launcher reads it back;
  // the task's kernel sees the context in device memory.
  FakeKernel bounds = [&](const KernelLaunch& launch) {
    ASSERT_EQ(launch.params.size(), 2u);
    EXPECT_TRUE(device->Holds(launch.params[0], sizeof(QdLaunchContext)));
    auto* out = reinterpret_cast<int64_t*>(launch.params[1]);
    out[0] = 3;
    out[1] = 1003;
  };
  int runs = 0;
  FakeKernel run = [&](const KernelLaunch& launch) {
    ++runs;
    ASSERT_EQ(launch.params.size(), 3u);
    auto* ctx = reinterpret_cast<QdLaunchContext*>(launch.params[0]);
    EXPECT_TRUE(device->Holds(launch.params[0], sizeof(QdLaunchContext)));
    // The runtime record the context points at is device memory too, and
    // holds the published heap.
    EXPECT_TRUE(device->Holds(reinterpret_cast<uint64_t>(ctx->runtime),
                              sizeof(QdRuntime)));
    EXPECT_NE(ctx->runtime->adstack_heap, nullptr);
    EXPECT_EQ(launch.params[1], 3u);
    EXPECT_EQ(launch.params[2], 1003u);
  };
  ir::Kernel ir_kernel("recurrence");
  AdStackSpec stack;
  stack.slot_bytes = 8;
  GpuCompiledKernel kernel(Described(ir_kernel, Artifact({{stack}})));
  GpuTask task;
  task.kind = ir::TaskKind::kRangeFor;
  task.run = &run;
  task.bounds = &bounds;
  kernel.tasks.push_back(task);

  auto stats = backend.Launch(kernel, {}, {}, LaunchOptions{});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(runs, 1);
  ASSERT_EQ(device->launches.size(), 2u);
  const KernelLaunch& launched = device->launches[1];
  // 1000 iterations at 128 threads a block: 8 blocks, all resident.
  EXPECT_EQ(launched.block, 128u);
  EXPECT_EQ(launched.grid, 8u);
  const AdStackStats& adstack = backend.adstack_stats();
  ASSERT_EQ(adstack.capacities.size(), 1u);
  EXPECT_EQ(adstack.capacities[0], std::vector<int64_t>{7});
  EXPECT_GE(adstack.heap_bytes, adstack.per_thread_stride[0] * 8 * 128);
  EXPECT_EQ(adstack.heap_grows, 1);

  // An empty range runs nothing and grows nothing.
  bounds = [](const KernelLaunch& launch) {
    auto* out = reinterpret_cast<int64_t*>(launch.params[1]);
    out[0] = 5;
    out[1] = 5;
  };
  ASSERT_TRUE(backend.Launch(kernel, {}, {}, LaunchOptions{}).ok());
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(backend.adstack_stats().heap_grows, 1);
}

TEST(GpuBackendTest, TasksWithoutAdStacksAreQueuedWithTheirRangeOnDevice) {
  auto device = std::make_shared<FakeDevice>();
  FakeBackend backend(CompileConfig{}, device);
  ASSERT_TRUE(backend.Init().ok());
  FakeKernel nothing = [](const KernelLaunch&) {};
  ir::Kernel ir_kernel("saxpy");
  GpuCompiledKernel kernel(Described(ir_kernel, Artifact({{}, {}})));
  GpuTask range;
  range.kind = ir::TaskKind::kRangeFor;
  range.run = range.bounds = range.device_range_run = &nothing;
  GpuTask cells;
  cells.kind = ir::TaskKind::kStructFor;
  cells.run = &nothing;
  cells.cells = 300;
  kernel.tasks = {range, cells};
  // Graphs are asked for but this backend has none: a plain launch.
  LaunchOptions graph;
  graph.graph = true;
  auto stats = backend.Launch(kernel, {}, {}, graph);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->graph_replayed);
  ASSERT_EQ(device->launches.size(), 2u);
  EXPECT_EQ(device->launches[0].params.size(), 1u);  // device_range_run(ctx)
  EXPECT_EQ(device->launches[1].params[2], 300u);
  EXPECT_EQ(device->launches[1].grid, 3u);
  EXPECT_EQ(device->syncs, 0);  // queued: the launch returns at once
}

TEST(GpuBackendTest, AnErrorOfAQueuedLaunchIsReadAtTheNextSyncWithItsLaunch) {
  auto device = std::make_shared<FakeDevice>();
  FakeBackend backend(CompileConfig{}, device);
  ASSERT_TRUE(backend.Init().ok());
  // Records an out-of-bound access the way qd_report_error does.
  FakeKernel failing = [](const KernelLaunch& launch) {
    auto* ctx = reinterpret_cast<QdLaunchContext*>(launch.params[0]);
    ctx->runtime->error_code = QD_ERROR_OUT_OF_BOUND;
    ctx->runtime->error_site = 0;
    ctx->runtime->error_launch = ctx->launch_id;
    ctx->runtime->error_values[1] = 42;
  };
  FakeKernel clean = [](const KernelLaunch&) {};
  ir::Kernel ir_kernel("checked");
  GpuCompiledKernel bad(Described(ir_kernel, Artifact({{}}, {ErrorSite{}})));
  GpuCompiledKernel good(Described(ir_kernel, Artifact({{}}, {ErrorSite{}})));
  GpuTask task;
  task.kind = ir::TaskKind::kSerial;
  task.run = &failing;
  bad.tasks = {task};
  task.run = &clean;
  good.tasks = {task};

  auto first = backend.Launch(good, {}, {}, LaunchOptions{});
  auto second = backend.Launch(bad, {}, {}, LaunchOptions{});
  // A later launch changes the host-written part of the record; its
  // upload must leave the recorded error alone.
  backend.SetRoot(reinterpret_cast<char*>(0x1000));
  auto third = backend.Launch(good, {}, {}, LaunchOptions{});
  ASSERT_TRUE(first.ok() && second.ok() && third.ok());
  EXPECT_EQ(device->syncs, 0);
  ASSERT_TRUE(backend.Synchronize().ok());
  absl::optional<RuntimeErrorRecord> error = backend.TakeError();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, RuntimeErrorRecord::Code::kOutOfBound);
  EXPECT_EQ(error->launch, second->launch_id);
  EXPECT_NE(second->launch_id, third->launch_id);
  EXPECT_EQ(error->values[1], 42);
  // Read once: cleared on the device as well.
  EXPECT_FALSE(backend.TakeError().has_value());
  ASSERT_TRUE(backend.Launch(good, {}, {}, LaunchOptions{}).ok());
  EXPECT_FALSE(backend.TakeError().has_value());
}

}  // namespace
}  // namespace quadrants::gpu
