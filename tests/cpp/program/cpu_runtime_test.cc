// The CPU backend's runtime behaviour: large parallel reductions, the thread
// count, bounds checks and assertions reported at sync, and what code the
// checks add.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>

#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/raw_ostream.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/statements.h"
#include "quadrants/runtime/host/thread_pool.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/program/cpu_test_util.h"

namespace quadrants {
namespace {

using ir::AtomicOpKind;
using ir::IRBuilder;
using ir::Kernel;
using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using testing_util::CpuProgramTest;

constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kI64 = PrimitiveType::kI64;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;

// for i in range(n): total[0] += i   (i64 accumulator)
std::unique_ptr<Kernel> SumOfIndices() {
  auto k = std::make_unique<Kernel>("sum_of_indices");
  k->AddParam(KernelParam::Scalar("n", kI32));
  k->AddParam(KernelParam::Ndarray("total", kI64, 1));
  IRBuilder b(k.get());
  auto* loop = b.RangeFor(b.ConstI32(0), b.ArgLoad(0));
  auto scope = b.EnterBlock(loop->body());
  b.Atomic(AtomicOpKind::kAdd, b.NdarrayPtr(1, {b.ConstI32(0)}),
           b.Cast(b.LoopIndex(loop), kI64));
  return k;
}

class CpuThreadsTest : public CpuProgramTest,
                       public ::testing::WithParamInterface<int> {};

TEST_P(CpuThreadsTest, TenMillionIterationReductionIsExact) {
  const int threads = GetParam();
  Init({.cpu_max_num_threads = threads});
  EXPECT_EQ(program_->num_cpu_threads(), threads);
  auto total = Array(kI64, {1});
  constexpr int64_t n = 10'000'000;
  ASSERT_TRUE(Run(*SumOfIndices(), {I32(n), Arg(total)}).ok());
  EXPECT_EQ(Data<int64_t>(total)[0], n * (n - 1) / 2);
  EXPECT_GE(program_->last_launch().max_threads_used, 1);
  EXPECT_LE(program_->last_launch().max_threads_used, threads);
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuThreadsTest, ::testing::Values(1, 2, 3));

TEST(ThreadPoolTest, ThreadIdsAreStableAndBounded) {
  for (int threads : {1, 2, 4}) {
    host::ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    std::atomic<int64_t> covered{0};
    std::mutex mutex;
    std::set<int> ids;
    std::set<std::thread::id> os_threads_for_id0;
    pool.ParallelFor(5, 100005, [&](int64_t begin, int64_t end, int id) {
      covered += end - begin;
      std::lock_guard<std::mutex> lock(mutex);
      ids.insert(id);
    });
    EXPECT_EQ(covered.load(), 100000);
    for (int id : ids) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, threads);
    }
    EXPECT_EQ(pool.threads_used_last(), static_cast<int>(ids.size()));
  }
}

TEST(ThreadPoolTest, DefaultUsesHardwareThreads) {
  host::ThreadPool pool(0);
  EXPECT_EQ(pool.num_threads(), static_cast<int>(std::max(
                                    1u, std::thread::hardware_concurrency())));
}

// for i in range(n): a[i + offset] = 1.0   (at oob.py:12)
std::unique_ptr<Kernel> ShiftedWrite() {
  auto k =
      std::make_unique<Kernel>("shifted_write", SourceLocation{"oob.py", 10});
  k->AddParam(KernelParam::Ndarray("a", kF32, 1));
  k->AddParam(KernelParam::Scalar("offset", kI32));
  IRBuilder b(k.get());
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
  auto scope = b.EnterBlock(loop->body());
  b.SetLocation(SourceLocation{"oob.py", 12});
  b.GlobalStore(b.NdarrayPtr(0, {b.Add(b.LoopIndex(loop), b.ArgLoad(1))}),
                b.ConstF32(1.0f));
  return k;
}

class CpuBoundsTest : public CpuProgramTest {};

TEST_F(CpuBoundsTest,
       OutOfBoundAccessIsReportedAtSyncAndTheProgramStaysUsable) {
  Init({.check_out_of_bound = true});
  auto a = Array(kF32, {16});
  auto kernel = program_->Compile(*ShiftedWrite());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  ASSERT_TRUE(program_->Launch(**kernel, {Arg(a), I32(3)}).ok());
  absl::Status status = program_->Sync();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kAssertion);
  const std::string message(status.message());
  EXPECT_NE(message.find("kernel 'shifted_write'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("ndarray 'a' (argument 0)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("oob.py:12"), std::string::npos) << message;
  EXPECT_NE(message.find("outside [0, 16) on axis 0"), std::string::npos)
      << message;
  // The failing index is one of 16..18 (whichever thread failed first).
  EXPECT_NE(message.find("index 1"), std::string::npos) << message;
  // In-range elements were written; the buffer was never overrun.
  for (int i = 3; i < 16; ++i)
    EXPECT_EQ(Data<float>(a)[i], 1.0f);
  // The error is cleared and the program keeps working.
  EXPECT_TRUE(program_->Sync().ok());
  ASSERT_TRUE(program_->Launch(**kernel, {Arg(a), I32(0)}).ok());
  EXPECT_TRUE(program_->Sync().ok());
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(Data<float>(a)[i], 1.0f);
}

TEST_F(CpuBoundsTest, FieldIndexOutOfRangeNamesTheField) {
  Init({.debug = true});
  ir::SNodeTree& tree = program_->snodes();
  int dense = tree.AddDense(tree.root(), {0, 1}, {4, 3}).value();
  int grid = tree.AddPlace(dense, kI32, "grid").value();
  Kernel k("touch_grid", SourceLocation{"grid.py", 1});
  IRBuilder b(&k, &tree);
  b.SetLocation(SourceLocation{"grid.py", 5});
  b.GlobalStore(b.FieldPtr(grid, {b.ConstI32(1), b.ConstI32(3)}),
                b.ConstI32(7));
  absl::Status status = Run(k, {});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(
      status.message().find("field 'grid' at grid.py:5: index 3 is outside "
                            "[0, 3) on axis 1"),
      absl::string_view::npos)
      << status.message();
}

TEST_F(CpuBoundsTest, WithoutChecksTheGeneratedCodeHasNone) {
  // Lower the same kernel with and without checks and look at the LLVM IR
  // before the runtime helpers are inlined.
  auto lower = [](bool check) {
    auto kernel = ir::CloneKernel(*ShiftedWrite());
    ir::SNodeTree tree;
    EXPECT_TRUE(tree.Finalize().ok());
    EXPECT_TRUE(transforms::LowerToTasks(*kernel).ok());
    llvm::LLVMContext context;
    codegen::LoweringOptions options;
    options.check_out_of_bound = check;
    auto lowered = codegen::LowerKernel(*kernel, tree, options, context);
    EXPECT_TRUE(lowered.ok()) << lowered.status();
    std::string text;
    llvm::raw_string_ostream stream(text);
    lowered->module->print(stream, nullptr);
    return std::make_pair(stream.str(), lowered->data.error_sites.size());
  };
  auto [checked, checked_sites] = lower(true);
  auto [unchecked, unchecked_sites] = lower(false);
  EXPECT_NE(checked.find("call i32 @qd_check_index"), std::string::npos)
      << checked;
  EXPECT_EQ(checked_sites, 1u);
  EXPECT_EQ(unchecked.find("qd_check_index"), std::string::npos) << unchecked;
  EXPECT_EQ(unchecked_sites, 0u);
}

// if x[i] >= limit: assert fails, reporting x[i] and i
std::unique_ptr<Kernel> CheckedLimit() {
  auto k = std::make_unique<Kernel>("check_limit", SourceLocation{"lim.py", 1});
  k->AddParam(KernelParam::Ndarray("x", kF32, 1));
  IRBuilder b(k.get());
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
  auto scope = b.EnterBlock(loop->body());
  Stmt* i = b.LoopIndex(loop);
  Stmt* v = b.GlobalLoad(b.NdarrayPtr(0, {i}));
  b.SetLocation(SourceLocation{"lim.py", 4});
  b.Assert(b.Lt(v, b.ConstF32(10.0f)), "value too large", {v, i});
  return k;
}

class CpuAssertTest : public CpuProgramTest {};

TEST_F(CpuAssertTest, FailedAssertionRaisesAtSyncUnderDebug) {
  Init({.debug = true});
  auto x = Array(kF32, {8});
  Data<float>(x)[5] = 12.5f;
  absl::Status status = Run(*CheckedLimit(), {Arg(x)});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kAssertion);
  EXPECT_EQ(
      status.message(),
      "kernel 'check_limit': assertion failed at lim.py:4: value too large "
      "(values: 12.5, 5)");
  Data<float>(x)[5] = 0;
  EXPECT_TRUE(Run(*CheckedLimit(), {Arg(x)}).ok());
}

TEST_F(CpuAssertTest, AssertionsAreNotCheckedWithoutDebug) {
  auto x = Array(kF32, {8});
  Data<float>(x)[5] = 12.5f;
  EXPECT_TRUE(Run(*CheckedLimit(), {Arg(x)}).ok());
}

}  // namespace
}  // namespace quadrants
