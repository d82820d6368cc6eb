// VulkanMemory on device-local memory the host cannot map (forced with
// FeatureOverrides::force_staging, as on discrete GPUs) and on mapped
// memory: host copies move only their bytes, new allocations read zero,
// the staging copies are brought up to date on request, and every host
// access drains the queued work first.
#include "quadrants/runtime/vulkan/vulkan_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace quadrants::vulkan {
namespace {

class VulkanMemoryTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    FeatureOverrides overrides;
    overrides.force_staging = GetParam();
    absl::StatusOr<std::unique_ptr<VulkanDevice>> device =
        VulkanDevice::Create(overrides);
    if (!device.ok())
      GTEST_SKIP() << device.status();
    device_ = std::move(*device);
    memory_ = std::make_unique<VulkanMemory>(device_);
    memory_->set_drain([this] {
      ++drains_;
      return absl::OkStatus();
    });
  }
  bool unmapped() const { return !device_->device_memory_mappable(); }

  std::shared_ptr<VulkanDevice> device_;
  std::unique_ptr<VulkanMemory> memory_;
  int drains_ = 0;
};

TEST_P(VulkanMemoryTest, HostCopiesMoveOnlyTheirBytesAndDrainFirst) {
  if (GetParam())
    EXPECT_FALSE(memory_->host_addressable());
  constexpr int64_t kInts = 4096;
  absl::StatusOr<void*> data = memory_->Allocate(4 * kInts);
  ASSERT_TRUE(data.ok()) << data.status();
  auto* ints = static_cast<int32_t*>(*data);
  std::vector<int32_t> out(kInts, -1);
  ASSERT_TRUE(memory_->CopyToHost(out.data(), ints, 4 * kInts).ok());
  EXPECT_EQ(out, std::vector<int32_t>(kInts, 0)) << "a new allocation reads zero";

  std::vector<int32_t> row(100);
  std::iota(row.begin(), row.end(), 7);
  const int before = drains_;
  ASSERT_TRUE(memory_->CopyFromHost(ints + 1000, row.data(), 4 * 100).ok());
  ASSERT_TRUE(memory_->CopyToHost(out.data(), ints, 4 * kInts).ok());
  EXPECT_EQ(drains_, before + 2);
  for (int64_t k = 0; k < kInts; ++k) {
    const int32_t want = k >= 1000 && k < 1100 ? static_cast<int32_t>(k - 993) : 0;
    ASSERT_EQ(out[k], want) << "element " << k;
  }
  // A copy of a sub-range reads that range alone.
  std::vector<int32_t> part(10, -1);
  ASSERT_TRUE(memory_->CopyToHost(part.data(), ints + 1095, 4 * 10).ok());
  EXPECT_EQ(part, (std::vector<int32_t>{102, 103, 104, 105, 106, 0, 0, 0, 0, 0}));
  // Outside every allocation is an error where the host cannot map it.
  int32_t stray = 0;
  absl::Status outside = memory_->CopyToHost(&stray, &stray, 4);
  EXPECT_EQ(outside.ok(), !unmapped()) << outside;
  const int drains = drains_;
  memory_->Free(*data);
  EXPECT_EQ(drains_, drains + 1) << "Free waits for queued work";
}

TEST_P(VulkanMemoryTest, RefreshBringsTheHostCopiesUpToDate) {
  absl::StatusOr<void*> data = memory_->Allocate(64);
  ASSERT_TRUE(data.ok()) << data.status();
  std::vector<int32_t> values(16);
  std::iota(values.begin(), values.end(), 1);
  ASSERT_TRUE(memory_->CopyFromHost(*data, values.data(), 64).ok());
  if (unmapped()) {
    // The pointer is the staging copy's mapping: scribbling there leaves
    // the device copy, which the refresh brings back.
    std::memset(*data, 0x5a, 64);
  }
  ASSERT_TRUE(memory_->RefreshHostCopies().ok());
  std::vector<int32_t> seen(16);
  std::memcpy(seen.data(), *data, 64);
  EXPECT_EQ(seen, values);
  memory_->Free(*data);
}

INSTANTIATE_TEST_SUITE_P(Memory, VulkanMemoryTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Unmapped" : "AsTheDeviceHasIt";
                         });

}  // namespace
}  // namespace quadrants::vulkan
