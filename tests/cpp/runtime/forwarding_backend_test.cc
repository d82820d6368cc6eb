#include <gtest/gtest.h>

#include <memory>

#include "quadrants/runtime/backend.h"

namespace quadrants {
namespace {

// A backend whose answers differ from Backend's defaults.
class Distinct : public Backend {
 public:
  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel&, const ir::SNodeTree&) override {
    return absl::UnimplementedError("distinct");
  }
  void SetRoot(char* root) override { root_ = root; }
  absl::StatusOr<BackendLaunchStats> Launch(
      const CompiledKernel&, absl::Span<const ResolvedArgument>,
      absl::Span<const uint64_t>, const LaunchOptions&) override {
    return BackendLaunchStats{};
  }
  absl::Status Synchronize() override { return absl::CancelledError("sync"); }
  bool queues_launches() const override { return true; }
  absl::optional<RuntimeErrorRecord> TakeError() override {
    return RuntimeErrorRecord{};
  }
  std::shared_ptr<ArrayMemory> memory() override { return nullptr; }
  bool stages_host_arrays() const override { return true; }
  int num_threads() const override { return 7; }
  std::string device_description() const override { return "distinct"; }
  SimtLimits simt_limits() const override { return {16, 1024}; }
  std::vector<std::pair<std::string, int64_t>> device_capabilities()
      const override {
    return {{"spirv_has_int8", 1}};
  }
  absl::Status UpdateConfig(const CompileConfig& config) override {
    updated_ = true;
    return absl::OkStatus();
  }
  bool fuses_sin_cos() const override { return true; }
  const AdStackStats& adstack_stats() const override { return stats_; }

  char* root_ = nullptr;
  bool updated_ = false;
  AdStackStats stats_;
};

// Every question a wrapper does not override reaches the wrapped backend
// (a missed one once turned stacked sin/cos derivatives off under the
// AMDGPU codegen-only wrapper).
TEST(ForwardingBackendTest, EveryCallReachesTheWrappedBackend) {
  auto inner = std::make_unique<Distinct>();
  Distinct* seen = inner.get();
  ForwardingBackend wrapper(std::move(inner));
  EXPECT_TRUE(wrapper.fuses_sin_cos());
  EXPECT_TRUE(wrapper.queues_launches());
  EXPECT_TRUE(wrapper.stages_host_arrays());
  EXPECT_EQ(wrapper.num_threads(), 7);
  EXPECT_EQ(wrapper.device_description(), "distinct");
  EXPECT_EQ(wrapper.simt_limits().subgroup_size, 16);
  EXPECT_EQ(wrapper.simt_limits().max_shared_bytes, 1024);
  EXPECT_EQ(wrapper.device_capabilities().size(), 1u);
  EXPECT_TRUE(wrapper.UpdateConfig(CompileConfig()).ok());
  EXPECT_TRUE(seen->updated_);
  EXPECT_EQ(&wrapper.adstack_stats(), &seen->stats_);
  EXPECT_EQ(wrapper.Synchronize().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(wrapper.TakeError().has_value());
  char root = 0;
  wrapper.SetRoot(&root);
  EXPECT_EQ(seen->root_, &root);
}

}  // namespace
}  // namespace quadrants
