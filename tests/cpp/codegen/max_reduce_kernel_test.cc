// The GPU max-reduction kernel's IR, checked on the host: the builder runs
// with a host "thread" target, the module is JIT-compiled for this CPU, and
// its result over random jobs (several axes, out-of-range and missing reads,
// every narrow integer type, wrapping arithmetic) must equal the host
// BodyInterpreter's. A PTX test checks the NVPTX spelling when the CUDA
// toolkit is installed.
#include "quadrants/codegen/llvm/max_reduce_kernel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "llvm/IR/LLVMContext.h"
#include "quadrants/codegen/cpu/cpu_jit.h"
#include "quadrants/codegen/cuda/ptx_compiler.h"
#include "quadrants/codegen/llvm/optimize.h"
#include "quadrants/runtime/adstack/max_reducer.h"

namespace quadrants::codegen {
namespace {

using adstack::BodyInstr;
using adstack::BodyOp;
using adstack::ReducerJob;

constexpr char kThreadGlobal[] = "qd_test_thread";
constexpr int kThreads = 3;

// "Threads" run one after another: the index comes from a global the test
// sets before each call, so the grid-stride split and the atomic combine
// both take part.
GpuEntryTarget HostThreads() {
  GpuEntryTarget target;
  target.thread_index = [](llvm::IRBuilder<>& b) {
    llvm::Module* module = b.GetInsertBlock()->getModule();
    auto* global = new llvm::GlobalVariable(*module, b.getInt64Ty(), false,
                                            llvm::GlobalValue::ExternalLinkage,
                                            b.getInt64(0), kThreadGlobal);
    return b.CreateLoad(b.getInt64Ty(), global, /*isVolatile=*/true);
  };
  target.thread_count = [](llvm::IRBuilder<>& b) {
    return b.getInt64(kThreads);
  };
  target.mark_kernel = [](llvm::Function*) {};
  return target;
}

struct Array {
  ir::PrimitiveType dtype;
  std::vector<int64_t> extents;
  std::vector<char> bytes;
};

constexpr ir::PrimitiveType kTypes[] = {
    ir::PrimitiveType::kI8, ir::PrimitiveType::kI16, ir::PrimitiveType::kI32,
    ir::PrimitiveType::kU8, ir::PrimitiveType::kU16, ir::PrimitiveType::kU32};

class RandomJob {
 public:
  explicit RandomJob(uint32_t seed) : rng_(seed) {}

  ReducerJob Make(std::vector<Array>* arrays) {
    ReducerJob job;
    const int axes = Uniform(1, 3);
    for (int a = 0; a < axes; ++a) {
      job.begin.push_back(Uniform(-2, 3));
      job.end.push_back(job.begin.back() + Uniform(0, 7));
    }
    const int reads = Uniform(0, 2);
    arrays->resize(reads);
    for (int r = 0; r < reads; ++r) {
      Array& array = (*arrays)[r];
      array.dtype = kTypes[Uniform(0, 5)];
      const int ndim = Uniform(1, 2);
      const int bytes = ir::BitWidth(array.dtype) / 8;
      int64_t elements = 1;
      for (int d = 0; d < ndim; ++d) {
        array.extents.push_back(Uniform(0, 6));
        elements *= array.extents.back();
      }
      array.bytes.resize(std::max<int64_t>(1, elements * bytes));
      for (char& c : array.bytes)
        c = static_cast<char>(Uniform(0, 255));
      adstack::BodyRead read;
      read.id = r;
      for (int d = 0; d < ndim; ++d) {
        const bool is_axis = Uniform(0, 3) > 0;
        read.indices.push_back(
            {is_axis, is_axis ? Uniform(0, axes - 1) : Uniform(-1, 4)});
      }
      adstack::ResolvedRead where;
      // A read without memory has no value anywhere.
      where.base = Uniform(0, 9) == 0 ? nullptr : array.bytes.data();
      where.dtype = array.dtype;
      where.extents = array.extents;
      where.byte_strides.assign(ndim, bytes);
      for (int d = ndim - 2; d >= 0; --d)
        where.byte_strides[d] =
            where.byte_strides[d + 1] * array.extents[d + 1];
      job.reads.push_back(read);
      job.resolved.push_back(where);
    }
    const int length = Uniform(1, 8);
    for (int k = 0; k < length; ++k) {
      BodyInstr in;
      const int pick = k == 0 ? Uniform(0, 2) : Uniform(0, 6);
      if (pick == 0 || (pick == 2 && reads == 0)) {
        static const int64_t kConstants[] = {
            0, 1, -3, 7, int64_t{1} << 40, adstack::kNoValue};
        in = {BodyOp::kConst, -1, -1, kConstants[Uniform(0, 5)]};
      } else if (pick == 1) {
        in = {BodyOp::kAxis, Uniform(0, axes - 1), -1, 0};
      } else if (pick == 2) {
        in = {BodyOp::kRead, Uniform(0, reads - 1), -1, 0};
      } else {
        static const BodyOp kOps[] = {BodyOp::kAdd, BodyOp::kSub, BodyOp::kMul,
                                      BodyOp::kMax};
        in = {kOps[pick - 3], Uniform(0, k - 1), Uniform(0, k - 1), 0};
      }
      job.code.push_back(in);
    }
    return job;
  }

 private:
  int Uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  std::mt19937 rng_;
};

// The kernel's result for `job`, its index arithmetic `narrow` or not.
int64_t RunOnHost(CpuJit& jit, const ReducerJob& job, bool narrow) {
  MaxReduceShape shape = MaxReduceShape::Of(job);
  shape.narrow = narrow;
  llvm::LLVMContext context;
  auto module = BuildMaxReduceKernel(shape, HostThreads(), context,
                                     jit.triple(), jit.data_layout());
  AddPackedMaxReduceEntry(*module);
  OptimizeModule(*module, jit.target_machine());
  auto object = jit.EmitObject(*module);
  EXPECT_TRUE(object.ok()) << object.status();
  auto dylib = jit.AddObject(*object);
  EXPECT_TRUE(dylib.ok()) << dylib.status();
  auto kernel = jit.Lookup(*dylib, kMaxReducePackedEntry);
  auto thread = jit.Lookup(*dylib, kThreadGlobal);
  EXPECT_TRUE(kernel.ok() && thread.ok());
  const std::vector<int64_t> params = MaxReduceParams(job);
  int64_t out = adstack::kNoValue;
  auto run = reinterpret_cast<void (*)(const int64_t*, int64_t*)>(*kernel);
  for (int64_t t = 0; t < kThreads; ++t) {
    *static_cast<int64_t*>(*thread) = t;
    run(params.data(), &out);
  }
  return out;
}

TEST(MaxReduceKernelTest, MatchesTheHostInterpreterOnRandomJobs) {
  auto jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok()) << jit.status();
  int checked = 0, with_value = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    std::vector<Array> arrays;
    const ReducerJob job = RandomJob(seed).Make(&arrays);
    ASSERT_TRUE(MaxReduceShape::Of(job).narrow);
    const int64_t expected =
        adstack::BodyInterpreter(job).Reduce(0, job.Points());
    for (bool narrow : {true, false}) {
      EXPECT_EQ(RunOnHost(**jit, job, narrow), expected)
          << "seed " << seed << ", narrow " << narrow << ", shape "
          << MaxReduceShape::Of(job).Key();
    }
    ++checked;
    with_value += expected != adstack::kNoValue;
  }
  EXPECT_EQ(checked, 300);
  // The jobs exercise values, not only empty maxima.
  EXPECT_GT(with_value, 150);
}

TEST(MaxReduceKernelTest, WideRangesTakeSixtyFourBitIndices) {
  ReducerJob job;
  job.begin = {0};
  job.end = {int64_t{1} << 31};
  job.code = {{BodyOp::kAxis, 0, -1, 0}};
  EXPECT_FALSE(MaxReduceShape::Of(job).narrow);
  job.end = {1 << 20};
  EXPECT_TRUE(MaxReduceShape::Of(job).narrow);
  job.begin = {-(int64_t{1} << 40)};
  EXPECT_FALSE(MaxReduceShape::Of(job).narrow);
  // An axis past 32 bits, reduced with 64-bit indices, gives its exact end.
  auto jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok()) << jit.status();
  job.begin = {(int64_t{1} << 33) - 5};
  job.end = {(int64_t{1} << 33) + 7};
  EXPECT_EQ(RunOnHost(**jit, job, false), (int64_t{1} << 33) + 6);
}

TEST(MaxReduceKernelTest, ShapeKeyIgnoresConstantsButNotStructure) {
  ReducerJob a;
  a.begin = {0};
  a.end = {10};
  a.code = {{BodyOp::kAxis, 0, -1, 0},
            {BodyOp::kConst, -1, -1, 5},
            {BodyOp::kAdd, 0, 1, 0}};
  ReducerJob b = a;
  b.code[1].value = 9;
  b.end = {1 << 20};
  EXPECT_EQ(MaxReduceShape::Of(a).Key(), MaxReduceShape::Of(b).Key());
  b.code[2].op = BodyOp::kMul;
  EXPECT_NE(MaxReduceShape::Of(a).Key(), MaxReduceShape::Of(b).Key());
  EXPECT_EQ(MaxReduceParams(b), (std::vector<int64_t>{1 << 20, 0, 1 << 20, 9}));
  EXPECT_EQ(MaxReduceShape::Of(b).NumParams(), 4);
}

TEST(MaxReduceKernelTest, PtxCombinesAWarpBeforeOneAtomic) {
  auto compiler = CreatePtxCompiler(90, 12040);
  if (!compiler.ok())
    GTEST_SKIP() << compiler.status();
  std::vector<Array> arrays;
  const ReducerJob job = RandomJob(7).Make(&arrays);
  auto ptx = (*compiler)->CompileMaxReduce(MaxReduceShape::Of(job));
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  EXPECT_NE(ptx->find(std::string(".entry ") + kMaxReduceEntry),
            std::string::npos);
  EXPECT_NE(ptx->find("shfl.sync.bfly"), std::string::npos) << *ptx;
  EXPECT_NE(ptx->find("atom.global.max.s64"), std::string::npos) << *ptx;
}

}  // namespace
}  // namespace quadrants::codegen
