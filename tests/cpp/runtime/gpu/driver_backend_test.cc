// The GPU backend over a vendor driver's hooks (gpu::DriverBackend), against
// a fake driver whose memory is host memory and whose modules are the
// binaries the real AMDGPU compiler makes: managed memory, launches,
// module loading and lookup of every entry, and the offline cache.
#include "quadrants/runtime/gpu/driver_backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "quadrants/codegen/amdgpu/hsaco_compiler.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::gpu {
namespace {

class FakeDriver : public Driver {
 public:
  // Fresh device memory holds garbage: whoever needs zeros clears it.
  absl::StatusOr<uint64_t> Allocate(int64_t bytes) override {
    char* data = Keep(bytes);
    std::memset(data, 0xff, bytes);
    allocated_sizes.push_back(bytes);
    return reinterpret_cast<uint64_t>(data);
  }
  void Free(uint64_t address) override {
    blocks.erase(reinterpret_cast<char*>(address));
    ++frees;
  }
  absl::Status CopyToDevice(uint64_t address, const void* data,
                            int64_t bytes) override {
    std::memcpy(reinterpret_cast<void*>(address), data, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* data, uint64_t address,
                          int64_t bytes) override {
    std::memcpy(data, reinterpret_cast<const void*>(address), bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToDeviceAsync(uint64_t address, const void* pinned,
                                 int64_t bytes) override {
    return CopyToDevice(address, pinned, bytes);
  }
  absl::Status Zero(uint64_t address, int64_t bytes) override {
    std::memset(reinterpret_cast<void*>(address), 0, bytes);
    return absl::OkStatus();
  }
  absl::StatusOr<void*> AllocatePinned(int64_t bytes) override {
    return Keep(bytes);
  }
  void FreePinned(void* data) override {
    blocks.erase(static_cast<char*>(data));
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::StatusOr<void*> LoadModule(const std::string& binary) override {
    modules.push_back(binary);
    ++loaded;
    return reinterpret_cast<void*>(modules.size());
  }
  void UnloadModule(void* module) override { ++unloaded; }
  // The module's binary names every function it defines.
  absl::StatusOr<void*> Function(void* module,
                                 const std::string& name) override {
    const std::string& binary =
        modules.at(reinterpret_cast<uintptr_t>(module) - 1);
    if (binary.find(name) == std::string::npos)
      return absl::NotFoundError("fakeModuleGetFunction failed: " + name);
    looked_up.push_back(name);
    return static_cast<void*>(&looked_up);
  }

  absl::StatusOr<DeviceLimits> Limits() override {
    return DeviceLimits{4096, int64_t{1} << 30};
  }
  absl::Status AllowSharedMemory(void*, int64_t) override {
    return absl::OkStatus();
  }
  int SubgroupSize() const override { return 32; }
  absl::StatusOr<int64_t> MaxSharedBytes() override { return 48 * 1024; }

  std::vector<std::vector<uint64_t>> launched;
  std::vector<std::string> modules;
  std::vector<std::string> looked_up;
  std::vector<int64_t> allocated_sizes;
  int loaded = 0, unloaded = 0, frees = 0;

 protected:
  absl::Status LaunchKernel(void* function, unsigned grid, unsigned block,
                            unsigned shared_bytes, void** params) override {
    launched.push_back({*static_cast<uint64_t*>(params[0]),
                        *static_cast<uint64_t*>(params[1])});
    return absl::OkStatus();
  }

 private:
  char* Keep(size_t bytes) {
    auto block = std::make_unique<char[]>(bytes);
    char* data = block.get();
    blocks[data] = std::move(block);
    return data;
  }

  std::map<char*, std::unique_ptr<char[]>> blocks;
};

TEST(DriverBackendTest, InitSizesTheLauncherAndArrayMemoryIsClearedDeviceMemory) {
  auto driver = std::make_shared<FakeDriver>();
  DriverBackend backend(CompileConfig{}, driver, nullptr, {});
  ASSERT_TRUE(backend.Init().ok());
  EXPECT_EQ(backend.num_threads(), 4096);

  const size_t before = driver->allocated_sizes.size();
  absl::StatusOr<void*> data = backend.memory()->Allocate(300);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(driver->allocated_sizes.size(), before + 1);
  EXPECT_EQ(driver->allocated_sizes.back(), 512);
  // The host reaches it through copies only.
  EXPECT_FALSE(backend.memory()->host_addressable());
  std::vector<char> bytes(512, 1);
  ASSERT_TRUE(backend.memory()->CopyToHost(bytes.data(), *data, 512).ok());
  for (int i = 0; i < 512; ++i)
    ASSERT_EQ(bytes[i], 0) << "at " << i;
  const int frees = driver->frees;
  backend.memory()->Free(*data);
  EXPECT_EQ(driver->frees, frees + 1);

  ASSERT_TRUE(driver->Launch(KernelLaunch{nullptr, 1, 1, {7, 9}}).ok());
  EXPECT_EQ(driver->launched, (std::vector<std::vector<uint64_t>>{{7, 9}}));
}

// The first sample kernel that lowers to tasks without autodiff.
std::unique_ptr<ir::Kernel> SampleKernel() {
  for (auto& sample : ir::samples::AllSampleKernels()) {
    std::unique_ptr<ir::Kernel> kernel = ir::CloneKernel(*sample.kernel);
    transforms::PipelineOptions options;
    options.snodes = &ir::samples::SampleTree();
    if (transforms::LowerToTasks(*kernel, options).ok())
      return kernel;
  }
  return nullptr;
}

TEST(DriverBackendTest, CompilesLoadsEveryEntryAndReusesTheOfflineCache) {
  auto compiler = codegen::CreateHsacoCompiler("gfx942");
  if (!compiler.ok())
    GTEST_SKIP() << compiler.status();
  std::unique_ptr<ir::Kernel> kernel = SampleKernel();
  ASSERT_NE(kernel, nullptr);
  CompileConfig config;
  config.offline_cache = true;
  config.offline_cache_file_path = ::testing::TempDir() + "/driver_backend";
  const GpuCacheTarget cache_target{" test", "fake gfx942"};

  auto driver = std::make_shared<FakeDriver>();
  {
    DriverBackend backend(config, driver, *std::move(compiler), cache_target);
    ASSERT_TRUE(backend.Init().ok());
    auto compiled = backend.Compile(*kernel, ir::samples::SampleTree());
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_EQ(driver->loaded, 1);
    // Each task's entries were found in the module it loaded.
    EXPECT_GE(driver->looked_up.size(),
              static_cast<size_t>((*compiled)->num_tasks()));
    for (const std::string& name : driver->looked_up)
      EXPECT_NE(name.find("_entry"), std::string::npos) << name;
    EXPECT_EQ(backend.offline_cache_stats().misses, 1);
  }
  // The kernel and the backend are gone: so is the module.
  EXPECT_EQ(driver->unloaded, driver->loaded);

  auto again = codegen::CreateHsacoCompiler("gfx942");
  ASSERT_TRUE(again.ok());
  DriverBackend backend(config, driver, *std::move(again), cache_target);
  ASSERT_TRUE(backend.Init().ok());
  ASSERT_TRUE(backend.Compile(*kernel, ir::samples::SampleTree()).ok());
  EXPECT_EQ(backend.offline_cache_stats().hits, 1);
  ASSERT_EQ(driver->modules.size(), 2u);
  EXPECT_EQ(driver->modules[1], driver->modules[0]);
}

}  // namespace
}  // namespace quadrants::gpu
