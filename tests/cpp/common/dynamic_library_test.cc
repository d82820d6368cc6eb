#include "quadrants/common/dynamic_library.h"

#include <gtest/gtest.h>

#include "quadrants/common/errors.h"

namespace quadrants {
namespace {

TEST(DynamicLibraryTest, LoadsLibcAndCallsASymbol) {
  auto libc = DynamicLibrary::Open({"libc.so.6"});
  ASSERT_TRUE(libc.ok()) << libc.status();
  size_t (*strlen_fn)(const char*) = nullptr;
  ASSERT_TRUE((*libc)->Load("strlen", &strlen_fn).ok());
  EXPECT_EQ(strlen_fn("quadrants"), 9u);
}

TEST(DynamicLibraryTest, MissingLibraryNamesEveryCandidate) {
  auto missing =
      DynamicLibrary::Open({"libqd_missing_a.so", "libqd_missing_b.so"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(GetErrorKind(missing.status()), ErrorKind::kUnavailable);
  std::string message(missing.status().message());
  EXPECT_NE(message.find("libqd_missing_a.so"), std::string::npos) << message;
  EXPECT_NE(message.find("libqd_missing_b.so"), std::string::npos) << message;
}

TEST(DynamicLibraryTest, MissingSymbolIsAnError) {
  auto libc = DynamicLibrary::Open({"libc.so.6"});
  ASSERT_TRUE(libc.ok());
  auto symbol = (*libc)->Symbol("qd_no_such_symbol");
  ASSERT_FALSE(symbol.ok());
  EXPECT_NE(symbol.status().message().find("qd_no_such_symbol"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace quadrants
