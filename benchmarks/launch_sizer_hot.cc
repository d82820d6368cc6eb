// LaunchSizer::Size per call with every cache hot, for three bounds: a 0-D
// field, range(arr[i]) under a parallel loop (a reducer-captured
// MaxOverRange), and a two-axis arr2d[i, j]. Prints one line per bound:
// "<name> ns=<nanoseconds per call> dispatches=<reducer dispatches>".
#include <chrono>
#include <cstdio>
#include <vector>

#include "quadrants/ir/size_expr.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/adstack/launch_sizer.h"
#include "quadrants/runtime/host/host_max_reducer.h"
#include "tests/cpp/runtime/one_stack_kernel.h"

namespace quadrants {
namespace {

using ir::SizeExpr;

class BenchKernel : public testing_util::OneStackKernel {
 public:
  BenchKernel(std::vector<ir::KernelParam> params, SizeExpr::Ptr tree)
      : OneStackKernel("bench", std::move(params), std::move(tree),
                       {"bench.py", 1}) {}
};

void Run(const char* name, BenchKernel& kernel, const ir::SNodeTree& snodes,
         const char* root, const QdLaunchContext& ctx,
         const std::vector<ResolvedArgument>& args) {
  CompileConfig config;
  host::HostMaxReducer reducer;
  adstack::LaunchSizer sizer(kernel.task_adstacks());
  sizer.set_reducer(&reducer);
  AdStackStats stats;
  std::vector<uint64_t> generations(snodes.size(), 1);
  auto size = [&] {
    auto layout = sizer.Size(config, kernel, 0, snodes, root, ctx, args,
                             generations, &stats);
    if (!layout.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(layout.status().message()).c_str());
      std::exit(1);
    }
    return layout->stride;
  };
  size();  // fills the caches
  constexpr int kCalls = 1000000;
  double best = 1e30;
  int64_t sink = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < kCalls; ++k)
      sink += size();
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / kCalls);
  }
  std::printf("%s ns=%.1f dispatches=%lld stride=%lld\n", name, best * 1e9,
              static_cast<long long>(stats.reducer_dispatches),
              static_cast<long long>(sink / (5LL * kCalls)));
}

int Main() {
  ir::SNodeTree snodes;
  const int place =
      *snodes.AddPlace(snodes.root(), ir::PrimitiveType::kI32, "n");
  std::vector<char> root(64, 0);
  root[0] = 4;
  QdLaunchContext ctx{};
  std::vector<int32_t> arr(1 << 20, 1);
  arr[12345] = 9;
  ctx.ndarray_data[0] = arr.data();
  ctx.ndarray_shape[0][0] = 1 << 10;
  ctx.ndarray_shape[0][1] = 1 << 10;
  std::vector<ResolvedArgument> args(1);
  args[0].data = arr.data();
  args[0].data_generation = 1;

  BenchKernel field(
      {}, SizeExpr::Add(SizeExpr::FieldLoad(place, {}), SizeExpr::Const(2)));
  Run("field_bound", field, snodes, root.data(), ctx, args);

  ctx.ndarray_shape[0][0] = 1 << 20;
  args[0].shape = {1 << 20};
  BenchKernel one_axis(
      {ir::KernelParam::Ndarray("arr", ir::PrimitiveType::kI32, 1)},
      SizeExpr::MaxOverRange(
          0, SizeExpr::Const(0), SizeExpr::NdarrayShape(0, 0),
          SizeExpr::Add(SizeExpr::NdarrayRead(0, {SizeExpr::BoundVar(0)}),
                        SizeExpr::Const(2))));
  Run("reducer_arr_i", one_axis, snodes, root.data(), ctx, args);

  ctx.ndarray_shape[0][0] = 1 << 10;
  args[0].shape = {1 << 10, 1 << 10};
  BenchKernel two_axis(
      {ir::KernelParam::Ndarray("arr2d", ir::PrimitiveType::kI32, 2)},
      SizeExpr::MaxOverRange(
          0, SizeExpr::Const(0), SizeExpr::NdarrayShape(0, 0),
          SizeExpr::MaxOverRange(
              1, SizeExpr::Const(0), SizeExpr::NdarrayShape(0, 1),
              SizeExpr::Add(SizeExpr::NdarrayRead(0, {SizeExpr::BoundVar(0),
                                                      SizeExpr::BoundVar(1)}),
                            SizeExpr::Const(2)))));
  Run("reducer_arr2d_ij", two_axis, snodes, root.data(), ctx, args);
  return 0;
}

}  // namespace
}  // namespace quadrants

int main() {
  return quadrants::Main();
}
