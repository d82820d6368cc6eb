// Abseil from Debian: string building, hash maps and Status round trips.
#include <gtest/gtest.h>

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace {

absl::StatusOr<int> ParsePositive(int value) {
  if (value <= 0)
    return absl::InvalidArgumentError(absl::StrCat("got ", value));
  return value;
}

TEST(AbslSmokeTest, StrCatJoinsMixedTypes) {
  EXPECT_EQ(absl::StrCat("kernel_", 7, "_", 2.5), "kernel_7_2.5");
  EXPECT_EQ(absl::StrJoin({1, 2, 3}, ","), "1,2,3");
}

TEST(AbslSmokeTest, FlatHashMapStoresAndFinds) {
  absl::flat_hash_map<std::string, int> sizes;
  for (int i = 0; i < 1000; ++i)
    sizes[absl::StrCat("stack", i)] = i + 2;
  EXPECT_EQ(sizes.size(), 1000u);
  EXPECT_EQ(sizes.at("stack257"), 259);
  EXPECT_FALSE(sizes.contains("stack1000"));
}

TEST(AbslSmokeTest, StatusOrCarriesValueOrError) {
  EXPECT_EQ(ParsePositive(3).value(), 3);
  absl::StatusOr<int> bad = ParsePositive(-1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "got -1");
}

}  // namespace
