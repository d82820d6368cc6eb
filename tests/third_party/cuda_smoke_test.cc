// The CUDA driver is loaded with dlopen. Without a GPU the loader reports why
// and the test skips with that reason; with one, a kernel compiled to PTX by
// LLVM (llc, at build time) is loaded, launched and its output checked.
#include <gtest/gtest.h>

#include <iostream>
#include <vector>

#include "quadrants/common/errors.h"
#include "quadrants/runtime/cuda/cuda_driver.h"
#include "tests/third_party/fill_kernel_ptx.h"

namespace {

using quadrants::cuda::CudaDriver;

TEST(CudaSmokeTest, LaunchesLlvmCompiledPtxOrReportsWhyNot) {
  auto loaded = CudaDriver::Load();
  if (!loaded.ok()) {
    EXPECT_EQ(quadrants::GetErrorKind(loaded.status()),
              quadrants::ErrorKind::kUnavailable);
    EXPECT_EQ(loaded.status().message().find("CUDA not available: "), 0u)
        << loaded.status().message();
    std::cout << loaded.status().message() << std::endl;
    GTEST_SKIP() << loaded.status().message();
  }
  CudaDriver& cu = **loaded;
  std::cout << "CUDA device: " << cu.device_name() << ", sm_"
            << cu.compute_capability() << ", driver " << cu.driver_version()
            << std::endl;

  CUmodule module = nullptr;
  ASSERT_TRUE(
      cu.Check(cu.cuModuleLoadData(&module, kFillKernelPtx), "cuModuleLoadData")
          .ok());
  CUfunction fill = nullptr;
  ASSERT_TRUE(cu.Check(cu.cuModuleGetFunction(&fill, module, "fill"),
                       "cuModuleGetFunction")
                  .ok());

  constexpr int kCount = 100000;
  CUdeviceptr out = 0;
  ASSERT_TRUE(
      cu.Check(cu.cuMemAlloc(&out, kCount * sizeof(int)), "cuMemAlloc").ok());
  int count = kCount;
  void* args[] = {&out, &count};
  constexpr unsigned kBlock = 128;
  absl::Status launched =
      cu.Check(cu.cuLaunchKernel(fill, (kCount + kBlock - 1) / kBlock, 1, 1,
                                 kBlock, 1, 1, 0, nullptr, args, nullptr),
               "cuLaunchKernel");
  ASSERT_TRUE(launched.ok()) << launched.message();
  ASSERT_TRUE(cu.Check(cu.cuCtxSynchronize(), "cuCtxSynchronize").ok());
  std::vector<int> host(kCount, -1);
  ASSERT_TRUE(cu.Check(cu.cuMemcpyDtoH(host.data(), out, kCount * sizeof(int)),
                       "cuMemcpyDtoH")
                  .ok());
  for (int i = 0; i < kCount; ++i)
    ASSERT_EQ(host[i], 3 * i + 1) << "at " << i;
  cu.cuMemFree(out);
  cu.cuModuleUnload(module);
  std::cout << "CUDA kernel wrote " << kCount << " correct elements"
            << std::endl;
}

}  // namespace
