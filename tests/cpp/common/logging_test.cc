#include "quadrants/common/logging.h"

#include <gtest/gtest.h>

#include <string>

namespace quadrants {
namespace {

int evaluated = 0;

std::string CountedMessage() {
  ++evaluated;
  return "counted";
}

TEST(LoggingTest, MessagesBelowThresholdAreNotBuilt) {
  SetLogThreshold(LogLevel::kWarning);
  evaluated = 0;
  QD_LOG(DEBUG) << CountedMessage();
  QD_LOG(INFO) << CountedMessage();
  EXPECT_EQ(evaluated, 0);
}

TEST(LoggingTest, MessagesAtThresholdReachStderr) {
  SetLogThreshold(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  QD_LOG(INFO) << "stack " << 7 << " sized";
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("stack 7 sized"), std::string::npos) << err;
  EXPECT_NE(err.find("logging_test.cc:"), std::string::npos) << err;
  EXPECT_NE(err.find("[quadrants I"), std::string::npos) << err;
}

}  // namespace
}  // namespace quadrants
