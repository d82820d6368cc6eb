#ifndef QUADRANTS_TESTS_CPP_PROGRAM_CPU_TEST_UTIL_H_
#define QUADRANTS_TESTS_CPP_PROGRAM_CPU_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "quadrants/ir/builder.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/program/program.h"

namespace quadrants::testing_util {

// A CPU Program plus helpers to compile and run builder-made kernels.
class CpuProgramTest : public ::testing::Test {
 protected:
  void SetUp() override { Init({}); }

  void Init(CompileConfig config) {
    config.arch = Arch::kCpu;
    auto program = Program::Create(config);
    ASSERT_TRUE(program.ok()) << program.status();
    program_ = std::move(*program);
  }

  std::shared_ptr<Ndarray> Array(ir::PrimitiveType dtype,
                                 std::vector<int64_t> shape) {
    auto array = program_->CreateNdarray(dtype, std::move(shape));
    EXPECT_TRUE(array.ok()) << array.status();
    return *array;
  }

  // Compiles and launches; returns Sync()'s status.
  absl::Status Run(const ir::Kernel& kernel, std::vector<KernelArgument> args) {
    auto compiled = program_->Compile(kernel);
    if (!compiled.ok())
      return compiled.status();
    absl::Status launched = program_->Launch(**compiled, args);
    if (!launched.ok())
      return launched;
    return program_->Sync();
  }

  static KernelArgument Arg(const std::shared_ptr<Ndarray>& array) {
    return KernelArgument::Array(array.get());
  }
  static KernelArgument I32(int32_t v) {
    return KernelArgument::Scalar(
        ir::Constant::Int(ir::PrimitiveType::kI32, v));
  }
  static KernelArgument F32(float v) {
    return KernelArgument::Scalar(
        ir::Constant::Float(ir::PrimitiveType::kF32, v));
  }
  static KernelArgument F64(double v) {
    return KernelArgument::Scalar(
        ir::Constant::Float(ir::PrimitiveType::kF64, v));
  }

  template <typename T>
  static T* Data(const std::shared_ptr<Ndarray>& array) {
    return static_cast<T*>(array->data());
  }

  std::unique_ptr<Program> program_;
};

}  // namespace quadrants::testing_util

#endif  // QUADRANTS_TESTS_CPP_PROGRAM_CPU_TEST_UTIL_H_
