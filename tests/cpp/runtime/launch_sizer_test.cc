#include "quadrants/runtime/adstack/launch_sizer.h"

#include <gtest/gtest.h>

#include <vector>

#include "quadrants/common/errors.h"
#include "quadrants/runtime/host/host_max_reducer.h"
#include "tests/cpp/runtime/one_stack_kernel.h"

namespace quadrants::adstack {
namespace {

using ir::SizeExpr;

class TestKernel : public testing_util::OneStackKernel {
 public:
  TestKernel(std::vector<ir::KernelParam> params, SizeExpr::Ptr tree)
      : OneStackKernel("sized", std::move(params), std::move(tree),
                       {"model.py", 42}) {}
};

class FailingReducer : public MaxReducer {
 public:
  absl::StatusOr<std::vector<int64_t>> Reduce(
      absl::Span<const ReducerJob>) override {
    ++calls;
    return MakeError(ErrorKind::kRuntime, "unavailable");
  }
  int calls = 0;
};

// Two i32 ndarrays, a (arg 0) and b (arg 1), and the launch state that
// points at them.
struct Launch {
  std::vector<int32_t> a, b;
  ir::SNodeTree snodes;
  QdLaunchContext ctx{};
  std::vector<ResolvedArgument> args{2};
  AdStackStats stats;

  Launch(int64_t na, int64_t nb) : a(na, 0), b(nb, 0) {
    Point();
    args[0].data_generation = args[1].data_generation = 1;
  }
  void Point() {
    ctx.ndarray_data[0] = a.data();
    ctx.ndarray_data[1] = b.data();
    ctx.ndarray_shape[0][0] = static_cast<int64_t>(a.size());
    ctx.ndarray_shape[1][0] = static_cast<int64_t>(b.size());
    args[0].data = a.data();
    args[1].data = b.data();
    args[0].shape = {static_cast<int64_t>(a.size())};
    args[1].shape = {static_cast<int64_t>(b.size())};
  }
  absl::StatusOr<int64_t> Size(LaunchSizer& sizer, const CompiledKernel& k) {
    CompileConfig config;
    auto layout =
        sizer.Size(config, k, 0, snodes, nullptr, ctx, args, {}, &stats);
    if (!layout.ok())
      return layout.status();
    return layout->capacities[0];
  }
};

std::vector<ir::KernelParam> TwoArrays() {
  return {ir::KernelParam::Ndarray("a", ir::PrimitiveType::kI32, 1),
          ir::KernelParam::Ndarray("b", ir::PrimitiveType::kI32, 1)};
}

// max over j in [0, max over i of a[i]) of b[j], plus 2: the outer spec's
// bound is the inner spec, so they take two rounds.
SizeExpr::Ptr Nested() {
  SizeExpr::Ptr inner = SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::NdarrayShape(0, 0),
      SizeExpr::NdarrayRead(0, {SizeExpr::BoundVar(0)}));
  return SizeExpr::Add(
      SizeExpr::MaxOverRange(1, SizeExpr::Const(0), inner,
                             SizeExpr::NdarrayRead(1, {SizeExpr::BoundVar(1)})),
      SizeExpr::Const(2));
}

TEST(LaunchSizerTest, NestedSpecsTakeOneRoundPerDepthAndCacheSeparately) {
  TestKernel kernel(TwoArrays(), Nested());
  host::ThreadPool pool(2);
  host::HostMaxReducer reducer(&pool);
  LaunchSizer sizer(kernel.task_adstacks());
  sizer.set_reducer(&reducer);
  Launch l(1000, 1000);
  l.a[17] = 300;  // b is read over [0, 300)
  l.b[299] = 55;
  l.b[300] = 999;  // just outside: does not count
  ASSERT_EQ(*l.Size(sizer, kernel), 55 + 2);
  EXPECT_EQ(sizer.specs(0).size(), 2u);
  EXPECT_EQ(l.stats.reducer_dispatches, 2);
  EXPECT_EQ(l.stats.reducer_rounds, 2);
  EXPECT_EQ(l.stats.tree_evaluations, 1);

  ASSERT_EQ(*l.Size(sizer, kernel), 55 + 2);  // everything hot
  EXPECT_EQ(l.stats.cache_hits, 1);
  EXPECT_EQ(l.stats.reducer_dispatches, 2);

  // Only b changes: the inner spec (over a) comes from its cache.
  l.b[10] = 70;
  l.args[1].data_generation = 2;
  ASSERT_EQ(*l.Size(sizer, kernel), 70 + 2);
  EXPECT_EQ(l.stats.reducer_dispatches, 3);
  EXPECT_EQ(l.stats.reducer_cache_hits, 1);
  EXPECT_EQ(l.stats.tree_evaluations, 2);
}

TEST(LaunchSizerTest, AxisPastTheGuardIsExactWithAReducerAndRaisesWithout) {
  const int64_t n = (int64_t{1} << 24) + 10;
  auto tree = SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::NdarrayShape(0, 0),
      SizeExpr::Add(SizeExpr::NdarrayRead(0, {SizeExpr::BoundVar(0)}),
                    SizeExpr::Const(2)));
  TestKernel kernel(TwoArrays(), tree);
  Launch l(n, 1);
  l.a[n - 1] = 12;

  LaunchSizer serial(kernel.task_adstacks());
  auto raised = l.Size(serial, kernel);
  ASSERT_FALSE(raised.ok());
  const std::string message(raised.status().message());
  EXPECT_NE(message.find("16777216"), std::string::npos) << message;
  EXPECT_NE(message.find("'sized'"), std::string::npos) << message;
  EXPECT_NE(message.find("model.py:42"), std::string::npos) << message;

  // A reducer that fails leaves the range to the serial walk: same raise.
  FailingReducer failing;
  LaunchSizer fallback(kernel.task_adstacks());
  fallback.set_reducer(&failing);
  auto again = l.Size(fallback, kernel);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(failing.calls, 1);
  EXPECT_NE(std::string(again.status().message()).find("16777216"),
            std::string::npos);

  host::HostMaxReducer reducer;
  LaunchSizer reduced(kernel.task_adstacks());
  reduced.set_reducer(&reducer);
  auto exact = l.Size(reduced, kernel);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(*exact, 12 + 2);
}

TEST(LaunchSizerTest, FailingReducerFallsBackToTheSerialWalkWithinTheGuard) {
  TestKernel kernel(TwoArrays(), Nested());
  FailingReducer failing;
  LaunchSizer sizer(kernel.task_adstacks());
  sizer.set_reducer(&failing);
  Launch l(100, 100);
  l.a[3] = 50;
  l.b[49] = 8;
  ASSERT_EQ(*l.Size(sizer, kernel), 8 + 2);
  EXPECT_EQ(l.stats.reducer_dispatches, 0);
}

// Two checkpointable loops: group 0 carries two f32 values through 1000
// iterations, group 1 one f64 through 100; and a plain stack.
std::vector<AdStackSpec> CheckpointSpecs() {
  auto spec = [](int64_t slot, int group, bool checkpoints) {
    AdStackSpec s;
    s.slot_bytes = slot;
    s.static_capacity = 1;
    s.checkpoint_group = group;
    s.checkpoints = checkpoints;
    return s;
  };
  return {spec(4, 0, true),  spec(4, 0, true),  spec(4, 0, false),
          spec(4, 0, false), spec(8, 1, true),  spec(8, 1, false),
          spec(4, -1, false)};
}

TEST(ChooseCheckpointsTest, AmpleBudgetLeavesLoopsUnsegmented) {
  const std::vector<AdStackSpec> specs = CheckpointSpecs();
  // As sized: checkpoint stacks start at 0, loop stacks at trips + 2.
  std::vector<int64_t> caps = {0, 0, 1002, 1002, 0, 102, 10};
  std::vector<int64_t> segments =
      ChooseCheckpoints(specs, &caps, 16, int64_t{1} << 30, false);
  EXPECT_EQ(caps, (std::vector<int64_t>{0, 0, 1002, 1002, 0, 102, 10}));
  EXPECT_EQ(segments, std::vector<int64_t>(7, 0));
}

TEST(ChooseCheckpointsTest, LargestLoopIsSegmentedFirstAtAboutSqrtT) {
  const std::vector<AdStackSpec> specs = CheckpointSpecs();
  std::vector<int64_t> caps = {1002, 1002, 1002, 1002, 102, 102, 10};
  // Unsegmented, a thread takes about 9 KB; allow 2 KB for each of 16.
  std::vector<int64_t> segments =
      ChooseCheckpoints(specs, &caps, 16, 16 * 2048, false);
  // k = ceil(sqrt(1000)) = 32: 32 + 2 slots per iteration stack and
  // ceil(1000 / 32) + 2 = 34 checkpoints; group 1 is not needed.
  EXPECT_EQ(caps, (std::vector<int64_t>{34, 34, 34, 34, 0, 102, 10}));
  EXPECT_EQ(segments, (std::vector<int64_t>{0, 0, 32, 32, 0, 0, 0}));
}

TEST(ChooseCheckpointsTest, TighterBudgetSegmentsTheNextLoopToo) {
  const std::vector<AdStackSpec> specs = CheckpointSpecs();
  std::vector<int64_t> caps = {1002, 1002, 1002, 1002, 102, 102, 10};
  std::vector<int64_t> segments =
      ChooseCheckpoints(specs, &caps, 16, 16 * 1000, false);
  EXPECT_EQ(segments, (std::vector<int64_t>{0, 0, 32, 32, 0, 10, 0}));
  EXPECT_EQ(caps[4], 12);  // ceil(100 / 10) + 2
  EXPECT_EQ(caps[5], 12);
}

TEST(ChooseCheckpointsTest, ForcedCapacitiesAreNeverSegmented) {
  const std::vector<AdStackSpec> specs = CheckpointSpecs();
  std::vector<int64_t> caps(7, 5000);
  std::vector<int64_t> segments =
      ChooseCheckpoints(specs, &caps, 16, 1024, /*forced=*/true);
  EXPECT_EQ(segments, std::vector<int64_t>(7, 0));
  EXPECT_EQ(caps, (std::vector<int64_t>{0, 0, 5000, 5000, 0, 5000, 5000}));
}

TEST(AdStackBudgetTest, OneFunctionResolvesEveryBackendsDefault) {
  CompileConfig config;
  const int64_t gib = int64_t{1} << 30;
  EXPECT_EQ(AdStackBudget(config, HeapMemory::kHostRam, 16 * gib), 4 * gib);
  EXPECT_EQ(AdStackBudget(config, HeapMemory::kDeviceMemory, 80 * gib),
            40 * gib);
  EXPECT_EQ(AdStackBudget(config, HeapMemory::kVulkanHeaps, 0),
            2 * kVulkanHeapBytes);
  config.device_memory_fraction = 0.25;
  EXPECT_EQ(AdStackBudget(config, HeapMemory::kDeviceMemory, 80 * gib),
            20 * gib);
  // device_memory_GB wins over the fraction; neither sizes the host's.
  config.device_memory_GB = 3;
  EXPECT_EQ(AdStackBudget(config, HeapMemory::kDeviceMemory, 80 * gib),
            3 * gib);
  EXPECT_EQ(AdStackBudget(config, HeapMemory::kHostRam, 16 * gib), 4 * gib);
  // An explicit budget wins everywhere.
  config.ad_stack_max_bytes = 12345;
  for (HeapMemory memory : {HeapMemory::kHostRam, HeapMemory::kDeviceMemory,
                            HeapMemory::kVulkanHeaps})
    EXPECT_EQ(AdStackBudget(config, memory, 80 * gib), 12345);
}

TEST(AdStackLayoutTest, OneHeapCountsEveryStackInTheStride) {
  std::vector<AdStackSpec> specs(2);
  specs[0].dtype = ir::PrimitiveType::kF32;
  specs[0].slot_bytes = 4;
  specs[1].dtype = ir::PrimitiveType::kI32;
  specs[1].slot_bytes = 4;
  specs[1].checkpoints = true;
  const AdStackLayout layout = LayOut(specs, {3, 5});
  // An i64 count then the slots, 8-byte aligned: 8 + 12 -> 24, 8 + 20 -> 32.
  EXPECT_EQ(layout.offsets, (std::vector<int64_t>{0, 24}));
  EXPECT_EQ(layout.stride, 56);
  EXPECT_EQ(layout.int_stride, 0);
  EXPECT_EQ(layout.float_stride(), 56);
  EXPECT_EQ(layout.checkpoints, (std::vector<bool>{false, true}));
}

TEST(AdStackLayoutTest, ByKindSplitsFloatAndIntHeapsWithoutCounts) {
  std::vector<AdStackSpec> specs(3);
  specs[0].dtype = ir::PrimitiveType::kF32;
  specs[0].slot_bytes = 8;  // primal and adjoint
  specs[1].dtype = ir::PrimitiveType::kI32;
  specs[1].slot_bytes = 4;
  specs[2].dtype = ir::PrimitiveType::kF64;
  specs[2].slot_bytes = 8;
  AdStackLayout layout = LayOutByKind(specs, {3, 0, 2});
  // A stack of capacity 0 still gets a slot.
  EXPECT_EQ(layout.capacities, (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(layout.offsets, (std::vector<int64_t>{0, 0, 24}));
  EXPECT_EQ(layout.float_stride(), 40);
  EXPECT_EQ(layout.int_stride, 8);
  EXPECT_EQ(layout.stride, 48);
  layout.threads = 100;
  EXPECT_EQ(layout.slices(), 100);
  layout.rows = 7;
  EXPECT_EQ(layout.slices(), 7);
}

TEST(AdStackStatsTest, CheckpointedCountsSegmentStacksOfTheLastLaunch) {
  AdStackStats stats;
  AdStackLayout layout;
  layout.capacities = {34, 34, 12, 12};
  layout.segments = {32, 0, 32, 0};
  layout.checkpoints = {false, true, false, true};
  BeginLaunchStats(2, &stats);
  RecordLayout(layout, 1, 2, 16, &stats);
  EXPECT_EQ(stats.checkpointed, 2);
  EXPECT_EQ(stats.segments[1], (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(stats.checkpoint_capacities[1], (std::vector<int64_t>{34, 12}));
  // The next launch starts from nothing.
  BeginLaunchStats(2, &stats);
  EXPECT_EQ(stats.checkpointed, 0);
  EXPECT_TRUE(stats.segments[1].empty());
}

}  // namespace
}  // namespace quadrants::adstack
