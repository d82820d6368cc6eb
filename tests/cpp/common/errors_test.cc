#include "quadrants/common/errors.h"

#include <gtest/gtest.h>

#include "absl/status/statusor.h"
#include "quadrants/common/status_macros.h"

namespace quadrants {
namespace {

absl::StatusOr<int> Half(int value) {
  if (value % 2 != 0) {
    return MakeError(ErrorKind::kType, SourceLocation{"k.py", 12},
                     "expected an even value");
  }
  return value / 2;
}

absl::StatusOr<int> Quarter(int value) {
  QD_ASSIGN_OR_RETURN(int half, Half(value));
  QD_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::Status CheckQuarter(int value) {
  QD_RETURN_IF_ERROR(Quarter(value).status());
  return absl::OkStatus();
}

TEST(ErrorsTest, KindSurvivesStatusPropagation) {
  absl::StatusOr<int> result = Quarter(6);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(GetErrorKind(result.status()), ErrorKind::kType);
  EXPECT_EQ(result.status().message(), "k.py:12: expected an even value");
  EXPECT_EQ(GetErrorKind(CheckQuarter(6)), ErrorKind::kType);
  EXPECT_EQ(Quarter(8).value(), 2);
  EXPECT_TRUE(CheckQuarter(8).ok());
}

TEST(ErrorsTest, EveryKindRoundTripsThroughStatusAndException) {
  for (ErrorKind kind :
       {ErrorKind::kCompilation, ErrorKind::kSyntax, ErrorKind::kType,
        ErrorKind::kAssertion, ErrorKind::kRuntime, ErrorKind::kUnavailable,
        ErrorKind::kGlobalDataAccess, ErrorKind::kGradient}) {
    absl::Status status = MakeError(kind, "boom");
    EXPECT_EQ(GetErrorKind(status), kind) << ErrorKindName(kind);
    try {
      ThrowIfError(status);
      ADD_FAILURE() << "no exception for " << ErrorKindName(kind);
    } catch (const QuadrantsError& error) {
      EXPECT_EQ(error.kind(), kind);
      EXPECT_STREQ(error.what(), "boom");
      EXPECT_EQ(GetErrorKind(error.ToStatus()), kind);
    }
  }
}

TEST(ErrorsTest, ForeignStatusesMapByCode) {
  EXPECT_EQ(GetErrorKind(absl::UnavailableError("x")), ErrorKind::kUnavailable);
  EXPECT_EQ(GetErrorKind(absl::InternalError("x")), ErrorKind::kRuntime);
  EXPECT_NO_THROW(ThrowIfError(absl::OkStatus()));
}

TEST(ErrorsTest, UnknownLocationIsSpelledOut) {
  EXPECT_EQ(SourceLocation{}.ToString(), "<unknown location>");
  EXPECT_EQ((SourceLocation{"/a/b.py", 3}).ToString(), "/a/b.py:3");
}

}  // namespace
}  // namespace quadrants
