// The Vulkan max-reducer against the host reference (BodyInterpreter) on
// random small jobs: several axes with negative begins, reads of every
// narrow integer type with constant and axis indices in and out of range,
// negative values and maxima that do not fit in 32 bits.
#include "quadrants/runtime/vulkan/vulkan_max_reducer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include "quadrants/codegen/spirv/msl_export.h"
#include "quadrants/codegen/spirv/reducer_shader.h"
#include "quadrants/codegen/spirv/spirv_tools.h"
#include "quadrants/common/errors.h"
#include "quadrants/runtime/adstack/max_reducer.h"

namespace quadrants::vulkan {
namespace {

using adstack::BodyInstr;
using adstack::BodyOp;
using adstack::kNoValue;
using adstack::ReducerJob;
using ir::PrimitiveType;

// The host reference, counting what it was handed.
class HostReducer : public adstack::MaxReducer {
 public:
  absl::StatusOr<std::vector<int64_t>> Reduce(
      absl::Span<const ReducerJob> jobs) override {
    jobs_ += static_cast<int64_t>(jobs.size());
    std::vector<int64_t> out;
    for (const ReducerJob& job : jobs) {
      if (job.Points() > kMaxPoints)
        return absl::ResourceExhaustedError("too many points");
      out.push_back(adstack::BodyInterpreter(job).Reduce(0, job.Points()));
    }
    return out;
  }
  int64_t jobs_ = 0;
  static constexpr int64_t kMaxPoints = int64_t{1} << 30;
};

class VulkanMaxReducerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<VulkanDevice>> device =
        VulkanDevice::Create(FeatureOverrides());
    if (!device.ok())
      GTEST_SKIP() << device.status();
    device_ = std::move(*device);
    absl::StatusOr<VulkanBuffer> buffer = CreateBuffer(*device_, kBytes, false);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    buffer_ = *buffer;
    absl::StatusOr<std::unique_ptr<VulkanMaxReducer>> reducer =
        VulkanMaxReducer::Create(
            device_,
            [this](const void* p) -> uint64_t {
              const char* c = static_cast<const char*>(p);
              if (c < buffer_.host || c >= buffer_.host + buffer_.bytes)
                return 0;
              return buffer_.address + (c - buffer_.host);
            },
            &host_);
    ASSERT_TRUE(reducer.ok()) << reducer.status();
    reducer_ = std::move(*reducer);
  }
  void TearDown() override {
    reducer_.reset();
    if (device_)
      DestroyBuffer(*device_, &buffer_);
  }

  // A read of `extents` elements of `type` at `offset` bytes into the
  // buffer, row-major.
  adstack::ResolvedRead Array(int64_t offset, PrimitiveType type,
                              std::vector<int64_t> extents) {
    adstack::ResolvedRead r;
    r.base = buffer_.host + offset;
    r.dtype = type;
    r.extents = std::move(extents);
    r.byte_strides.assign(r.extents.size(), ir::BitWidth(type) / 8);
    for (int d = static_cast<int>(r.extents.size()) - 2; d >= 0; --d)
      r.byte_strides[d] = r.byte_strides[d + 1] * r.extents[d + 1];
    return r;
  }

  // The device's result against the reference: equal when the maximum
  // fits in 32 bits, an error when it does not.
  void ExpectMatches(const ReducerJob& job, const std::string& what) {
    const int64_t want = adstack::BodyInterpreter(job).Reduce(0, job.Points());
    absl::StatusOr<std::vector<int64_t>> got = reducer_->Reduce({job});
    const bool fits =
        want == kNoValue || (want >= INT32_MIN && want <= INT32_MAX);
    ++(want == kNoValue ? no_value_ : fits ? values_ : too_wide_);
    if (!fits) {
      EXPECT_FALSE(got.ok()) << what << " want " << want;
      return;
    }
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    EXPECT_EQ((*got)[0], want) << what;
  }

  static constexpr int64_t kBytes = int64_t{1} << 22;
  std::shared_ptr<VulkanDevice> device_;
  VulkanBuffer buffer_;
  HostReducer host_;
  // How many checked jobs had no value, a 32-bit value or a wider one.
  int no_value_ = 0, values_ = 0, too_wide_ = 0;
  std::unique_ptr<VulkanMaxReducer> reducer_;
};

TEST(ReducerShader, PassesValidation) {
  std::vector<uint32_t> words = codegen::spirv::reducer::BuildReducerShader();
  absl::Status valid =
      codegen::spirv::ValidateModule(words, "the adstack max-reducer shader");
  EXPECT_TRUE(valid.ok()) << valid;
}

// Metal has no 64-bit atomics: the shader combines with 32-bit ones, so it
// cross-compiles to MSL.
TEST(ReducerShader, CrossCompilesToMsl) {
  auto metal = codegen::spirv::CrossCompileToMsl(codegen::spirv::reducer::BuildReducerShader());
  if (!metal.ok() && quadrants::GetErrorKind(metal.status()) ==
                         quadrants::ErrorKind::kUnavailable)
    GTEST_SKIP() << metal.status();
  ASSERT_TRUE(metal.ok()) << metal.status();
  EXPECT_NE(metal->find("kernel void"), std::string::npos);
  EXPECT_NE(metal->find("atomic_fetch_max_explicit"), std::string::npos)
      << *metal;
  EXPECT_NE(metal->find("atomic_fetch_or_explicit"), std::string::npos)
      << *metal;
}

TEST_F(VulkanMaxReducerTest, RandomJobsMatchTheInterpreter) {
  std::mt19937_64 rng(12345);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  // Random bytes with some large and negative values in every type.
  for (int64_t k = 0; k < 4096; ++k) {
    const uint32_t v = uniform(0, 3) == 0
                           ? static_cast<uint32_t>(rng())
                           : static_cast<uint32_t>(uniform(-300, 300));
    std::memcpy(buffer_.host + 4 * k, &v, 4);
  }
  const PrimitiveType types[] = {PrimitiveType::kI8,  PrimitiveType::kI16,
                                 PrimitiveType::kI32, PrimitiveType::kU8,
                                 PrimitiveType::kU16, PrimitiveType::kU32};
  for (int trial = 0; trial < 300; ++trial) {
    ReducerJob job;
    const int axes = static_cast<int>(uniform(1, 3));
    for (int a = 0; a < axes; ++a) {
      job.begin.push_back(uniform(-3, 3));
      job.end.push_back(job.begin.back() + uniform(trial % 17 == 0 ? 0 : 1, 7));
    }
    const int reads = static_cast<int>(uniform(0, 3));
    for (int r = 0; r < reads; ++r) {
      const int dims = static_cast<int>(uniform(1, 2));
      std::vector<int64_t> extents;
      adstack::BodyRead read;
      for (int d = 0; d < dims; ++d) {
        extents.push_back(uniform(1, 6));
        adstack::ReadIndex index;
        index.is_axis = uniform(0, 3) != 0;
        index.value =
            index.is_axis ? uniform(0, axes - 1) : uniform(-1, extents.back());
        read.indices.push_back(index);
      }
      job.reads.push_back(read);
      job.resolved.push_back(
          Array(4 * uniform(0, 1000), types[uniform(0, 5)], extents));
    }
    // Leaves first, then operators over earlier values.
    const int leaves = static_cast<int>(uniform(1, 3));
    for (int k = 0; k < leaves; ++k) {
      const int64_t kind = uniform(0, 2);
      if (kind == 0 && reads > 0) {
        job.code.push_back(
            {BodyOp::kRead, static_cast<int>(uniform(0, reads - 1)), -1, 0});
      } else if (kind == 1) {
        job.code.push_back(
            {BodyOp::kAxis, static_cast<int>(uniform(0, axes - 1)), -1, 0});
      } else {
        const int64_t big = uniform(0, 4) == 0 ? (int64_t{1} << 32) : 0;
        job.code.push_back({BodyOp::kConst, -1, -1, uniform(-50, 50) + big});
      }
    }
    const int ops = static_cast<int>(uniform(0, 4));
    const BodyOp binary[] = {BodyOp::kAdd, BodyOp::kSub, BodyOp::kMul,
                             BodyOp::kMax};
    for (int k = 0; k < ops; ++k) {
      const int n = static_cast<int>(job.code.size());
      job.code.push_back({binary[uniform(0, 3)],
                          static_cast<int>(uniform(0, n - 1)),
                          static_cast<int>(uniform(0, n - 1)), 0});
    }
    ExpectMatches(job, "trial " + std::to_string(trial));
  }
  EXPECT_EQ(host_.jobs_, 0) << "every job fits the shader";
  // The mix covers every outcome.
  EXPECT_GT(values_, 100);
  EXPECT_GT(no_value_, 10);
  EXPECT_GT(too_wide_, 10);
  std::cout << values_ << " values, " << no_value_ << " without a value, "
            << too_wide_ << " too wide\n";
}

TEST_F(VulkanMaxReducerTest, ManyInvocationsStrideAcrossRows) {
  // 2^20 points over two axes whose rows are not a multiple of the
  // dispatch: each invocation's steps carry from the inner axis.
  const int64_t rows = 1000, cols = 1037;
  std::vector<int32_t> values(rows * cols);
  std::mt19937_64 rng(7);
  for (int32_t& v : values)
    v = static_cast<int32_t>(rng() % 2001) - 1000;
  values[rows * cols - 5] = 123456;
  std::memcpy(buffer_.host, values.data(), 4 * values.size());
  ReducerJob job;
  job.begin = {-2, 5};
  job.end = {rows - 2, cols + 5};
  adstack::BodyRead read;
  read.indices = {{true, 0}, {true, 1}};
  job.reads = {read};
  job.resolved = {Array(0, PrimitiveType::kI32, {rows, cols})};
  // arr[i, j] - i: the peak is at i = rows - 3 (in range, shifted back).
  job.code = {{BodyOp::kRead, 0, -1, 0},
              {BodyOp::kAxis, 0, -1, 0},
              {BodyOp::kSub, 0, 1, 0}};
  ExpectMatches(job, "two axes");
  EXPECT_EQ(host_.jobs_, 0);
}

TEST_F(VulkanMaxReducerTest, MonotoneI32ReadsWalkStraightFromMemory) {
  // f(arr[c, i]) or f(arr[i, c]) for monotone f over a range that runs
  // past the array on both sides: the shader walks the i32s in range and
  // the host applies f; other shapes keep the interpreter.
  const int64_t rows = 300, cols = 517;
  std::vector<int32_t> values(rows * cols);
  std::mt19937_64 rng(11);
  for (int32_t& v : values)
    v = static_cast<int32_t>(rng() % 20001) - 10000;
  values[7 * cols + 480] = 99999;  // row 7's peak
  values[250 * cols + 3] = -99999;
  std::memcpy(buffer_.host, values.data(), 4 * values.size());
  using Code = std::vector<BodyInstr>;
  const std::vector<std::pair<std::string, Code>> bodies = {
      {"read", {{BodyOp::kRead, 0, -1, 0}}},
      {"read + 3",
       {{BodyOp::kRead, 0, -1, 0}, {BodyOp::kConst, -1, -1, 3},
        {BodyOp::kAdd, 0, 1, 0}}},
      {"4 + read * 2 - 7",
       {{BodyOp::kConst, -1, -1, 4}, {BodyOp::kRead, 0, -1, 0},
        {BodyOp::kConst, -1, -1, 2}, {BodyOp::kMul, 1, 2, 0},
        {BodyOp::kAdd, 0, 3, 0}, {BodyOp::kConst, -1, -1, 7},
        {BodyOp::kSub, 4, 5, 0}}},
      {"max(read, 5)",
       {{BodyOp::kRead, 0, -1, 0}, {BodyOp::kConst, -1, -1, 5},
        {BodyOp::kMax, 0, 1, 0}}},
  };
  int64_t fast = 0;
  for (const auto& [name, code] : bodies) {
    for (bool along_row : {true, false}) {
      ReducerJob job;
      const int64_t n = along_row ? cols : rows;
      job.begin = {-7};
      job.end = {n + 9};
      adstack::BodyRead read;
      read.indices = along_row ? std::vector<adstack::ReadIndex>{{false, 7},
                                                                 {true, 0}}
                               : std::vector<adstack::ReadIndex>{{true, 0},
                                                                 {false, 3}};
      job.reads = {read};
      job.resolved = {Array(0, PrimitiveType::kI32, {rows, cols})};
      job.code = code;
      ExpectMatches(job, name + (along_row ? " along row 7" : " down column 3"));
      ++fast;
    }
  }
  // -read is not monotone: interpreted, with the same answer.
  ReducerJob job;
  job.begin = {0};
  job.end = {cols};
  adstack::BodyRead read;
  read.indices = {{false, 250}, {true, 0}};
  job.reads = {read};
  job.resolved = {Array(0, PrimitiveType::kI32, {rows, cols})};
  job.code = {{BodyOp::kConst, -1, -1, 0}, {BodyOp::kRead, 0, -1, 0},
              {BodyOp::kSub, 0, 1, 0}};
  ExpectMatches(job, "0 - read");
  EXPECT_EQ(reducer_->fast_jobs(), fast);
  EXPECT_EQ(reducer_->device_jobs(), fast + 1);
  EXPECT_EQ(host_.jobs_, 0);
}

TEST_F(VulkanMaxReducerTest, EmptyAndAllOutOfRangeHaveNoValue) {
  ReducerJob job;
  job.begin = {10};
  job.end = {14};
  adstack::BodyRead read;
  read.indices = {{true, 0}};
  job.reads = {read};
  job.resolved = {Array(0, PrimitiveType::kI32, {4})};
  job.code = {{BodyOp::kRead, 0, -1, 0}};
  absl::StatusOr<std::vector<int64_t>> got = reducer_->Reduce({job});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0], kNoValue);
  job.end = {10};
  got = reducer_->Reduce({job});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0], kNoValue);
}

TEST_F(VulkanMaxReducerTest, WalksTheDeviceEndsEarlyGoToTheHost) {
  // One workgroup: 70000 points per invocation, past the 65535 loop trips
  // lavapipe runs in one invocation. There the walk is cut short and the
  // host reduces the job; elsewhere the device finishes it.
  reducer_->set_max_groups(1);
  ReducerJob job;
  job.begin = {-5};
  job.end = {codegen::spirv::reducer::kLocalSize * 70000 - 5};
  job.code = {{BodyOp::kAxis, 0, -1, 0}};
  absl::StatusOr<std::vector<int64_t>> got = reducer_->Reduce({job});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0], job.end[0] - 1);
  const bool lavapipe = device_->name().find("llvmpipe") != std::string::npos;
  EXPECT_EQ(host_.jobs_, lavapipe ? 1 : 0) << device_->name();
}

// Run with --gtest_also_run_disabled_tests: the time of one 2^25-point
// reduction of `arr[j] + 1` (a 2^20-element i32 array, 32 rows).
TEST_F(VulkanMaxReducerTest, DISABLED_Throughput) {
  const int64_t cols = int64_t{1} << 20;
  std::memset(buffer_.host, 0, 4 * cols);
  const int32_t peak = 77;
  std::memcpy(buffer_.host + 4 * 12345, &peak, 4);
  ReducerJob job;
  job.begin = {0, 0};
  job.end = {32, cols};
  adstack::BodyRead read;
  read.indices = {{true, 1}};
  job.reads = {read};
  job.resolved = {Array(0, PrimitiveType::kI32, {cols})};
  job.code = {{BodyOp::kRead, 0, -1, 0},
              {BodyOp::kConst, -1, -1, 1},
              {BodyOp::kAdd, 0, 1, 0}};
  for (int rep = 0; rep < 3; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<int64_t>> got = reducer_->Reduce({job});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0], peak + 1);
    std::cout << "2^25 points: " << seconds << " s\n";
  }
  EXPECT_EQ(host_.jobs_, 0);
}

TEST_F(VulkanMaxReducerTest, WhatTheShaderCannotTakeGoesToTheHost) {
  ReducerJob job;
  for (int a = 0; a < codegen::spirv::reducer::kMaxAxes + 1; ++a) {
    job.begin.push_back(0);
    job.end.push_back(2);
  }
  job.code = {{BodyOp::kAxis, 0, -1, 0}};
  ReducerJob wide;
  wide.begin = {0};
  wide.end = {4};
  adstack::BodyRead read;
  read.indices = {{true, 0}};
  wide.reads = {read};
  const int64_t big = int64_t{1} << 40;
  std::memcpy(buffer_.host, &big, 8);
  wide.resolved = {Array(0, PrimitiveType::kI64, {1})};
  wide.code = {{BodyOp::kRead, 0, -1, 0}};
  absl::StatusOr<std::vector<int64_t>> got = reducer_->Reduce({job, wide});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0], 1);
  EXPECT_EQ((*got)[1], big);
  EXPECT_EQ(host_.jobs_, 2);
  // 2^42 points: the host's to refuse.
  ReducerJob huge;
  huge.begin = {0, 0};
  huge.end = {int64_t{1} << 21, int64_t{1} << 21};
  huge.code = {{BodyOp::kAxis, 1, -1, 0}};
  EXPECT_FALSE(reducer_->Reduce({huge}).ok());
  EXPECT_EQ(host_.jobs_, 3);
}

}  // namespace
}  // namespace quadrants::vulkan
