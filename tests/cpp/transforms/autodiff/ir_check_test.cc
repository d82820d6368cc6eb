// The checker must reject as reliably as it accepts: each rule is tried
// with a script that holds and one that does not.
#include "tests/cpp/transforms/autodiff/ir_check.h"

#include <gtest/gtest.h>

namespace quadrants::ir_check {
namespace {

constexpr absl::string_view kText = R"(kernel k() {
  $0 : f32 = const 1
  $1 : f32 = add $0, $0
  $12 : f32 = mul $1, $0
  $13 = global_store $12, $1
}
)";

TEST(IrCheckTest, ChecksMatchInOrder) {
  EXPECT_TRUE(CheckIr(kText, R"(
    CHECK: const 1
    CHECK: mul
    CHECK: global_store
  )"));
  EXPECT_FALSE(CheckIr(kText, R"(
    CHECK: mul
    CHECK: add
  )"));
}

TEST(IrCheckTest, CheckNextWantsTheFollowingLine) {
  EXPECT_TRUE(CheckIr(kText, R"(
    CHECK: add
    CHECK-NEXT: mul
  )"));
  EXPECT_FALSE(CheckIr(kText, R"(
    CHECK: const
    CHECK-NEXT: mul
  )"));
}

TEST(IrCheckTest, CheckNotLooksBetweenItsNeighbours) {
  EXPECT_TRUE(CheckIr(kText, R"(
    CHECK: add
    CHECK-NOT: const
    CHECK: global_store
  )"));
  EXPECT_FALSE(CheckIr(kText, R"(
    CHECK: const
    CHECK-NOT: add
    CHECK: global_store
  )"));
  // A trailing CHECK-NOT looks to the end of the text.
  EXPECT_FALSE(CheckIr(kText, R"(
    CHECK: add
    CHECK-NOT: global_store
  )"));
}

TEST(IrCheckTest, NamesBindStatementsAndMustAgreeLater) {
  EXPECT_TRUE(CheckIr(kText, R"(
    CHECK: [[SUM]] : f32 = add [[ONE]], [[ONE]]
    CHECK: [[PRODUCT]] : f32 = mul [[SUM]], [[ONE]]
    CHECK: global_store [[PRODUCT]], [[SUM]]
  )"));
  EXPECT_FALSE(CheckIr(kText, R"(
    CHECK: [[SUM]] : f32 = add
    CHECK: global_store [[SUM]]
  )"));
  // The outer brackets of an index list are text.
  EXPECT_TRUE(CheckIr("  $4 : *f32 = field_ptr snode2[$3]\n",
                      "CHECK: field_ptr snode2[[[I]]]"));
  // A bound $1 does not match the start of $12.
  EXPECT_FALSE(CheckIr(kText, R"(
    CHECK: [[SUM]] : f32 = add
    CHECK: [[SUM]] : f32 = mul
  )"));
}

TEST(IrCheckTest, RegexesAndFailuresShowTheText) {
  EXPECT_TRUE(CheckIr(kText, "CHECK: const {{[0-9]+}}"));
  // {{$}} is the end of the line, also where a CHECK-NOT range stops short.
  EXPECT_TRUE(CheckIr(kText, "CHECK: mul $1, $0{{$}}"));
  EXPECT_TRUE(CheckIr(kText, R"(
    CHECK-NOT: = {{$}}
    CHECK: add $0
  )"));
  ::testing::AssertionResult result = CheckIr(kText, "CHECK: sub");
  ASSERT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("CHECK: sub (script line 1)"),
            std::string::npos)
      << result.message();
  EXPECT_NE(std::string(result.message()).find("   4 |   $12 : f32 = mul"),
            std::string::npos)
      << result.message();
}

TEST(IrCheckTest, MalformedScriptsFail) {
  EXPECT_FALSE(CheckIr(kText, "CHEKC: add"));
  EXPECT_FALSE(CheckIr(kText, "CHECK:"));
  EXPECT_FALSE(CheckIr(kText, "CHECK-NEXT: kernel"));
  EXPECT_FALSE(CheckIr(kText, "CHECK: [[open"));
}

}  // namespace
}  // namespace quadrants::ir_check
