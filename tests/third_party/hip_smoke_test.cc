// The HIP runtime is loaded with dlopen; without an AMD GPU the loader must
// report why, cleanly, and the test skips with that reason.
#include <gtest/gtest.h>

#include <iostream>

#include "quadrants/common/errors.h"
#include "quadrants/runtime/amdgpu/hip_driver.h"

namespace {

TEST(HipSmokeTest, LoadsDriverOrReportsWhyNot) {
  auto driver = quadrants::amdgpu::HipDriver::Load();
  if (!driver.ok()) {
    EXPECT_EQ(quadrants::GetErrorKind(driver.status()),
              quadrants::ErrorKind::kUnavailable);
    EXPECT_EQ(driver.status().message().find("AMDGPU not available: "), 0u)
        << driver.status().message();
    std::cout << driver.status().message() << std::endl;
    GTEST_SKIP() << driver.status().message();
  }
  std::cout << "AMDGPU device: " << (*driver)->device_name() << std::endl;
  EXPECT_FALSE((*driver)->device_name().empty());
}

}  // namespace
