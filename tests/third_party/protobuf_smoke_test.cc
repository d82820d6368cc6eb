// protobuf from Debian: a .proto compiled by qd_cc_proto_library, serialized
// and parsed back.
#include <gtest/gtest.h>

#include <string>

#include "tests/third_party/testdata/smoke.pb.h"

namespace {

TEST(ProtobufSmokeTest, SerializeAndParseRoundTrip) {
  quadrants::smoke::KernelRecord record;
  record.set_name("saxpy");
  record.set_ir_hash(0x123456789abcdefULL);
  for (int64_t v : {int64_t{3}, int64_t{-1}, int64_t{1} << 40}) {
    record.add_size_expr(v);
  }
  record.set_payload(std::string("\0\x01\x02", 3));

  std::string bytes;
  ASSERT_TRUE(record.SerializeToString(&bytes));
  quadrants::smoke::KernelRecord parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.name(), "saxpy");
  EXPECT_EQ(parsed.ir_hash(), 0x123456789abcdefULL);
  ASSERT_EQ(parsed.size_expr_size(), 3);
  EXPECT_EQ(parsed.size_expr(2), 1LL << 40);
  EXPECT_EQ(parsed.payload(), std::string("\0\x01\x02", 3));
}

TEST(ProtobufSmokeTest, TruncatedBytesFailToParse) {
  quadrants::smoke::KernelRecord record;
  record.set_name("a fairly long kernel name that spans bytes");
  std::string bytes = record.SerializeAsString();
  quadrants::smoke::KernelRecord parsed;
  EXPECT_FALSE(parsed.ParseFromString(bytes.substr(0, bytes.size() / 2)));
}

}  // namespace
