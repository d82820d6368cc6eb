#include "quadrants/common/binary_identity.h"

#include <string>

#include "gtest/gtest.h"

namespace quadrants {
namespace {

int AnchorInThisBinary() { return 7; }

// This test is linked with --build-id (see BUILD.bazel): its identity is the
// linker's build-id, read from memory, not a hash of the file.
TEST(BinaryIdentity, UsesTheBuildIdTheLinkerWrote) {
  const void* anchors[] = {reinterpret_cast<const void*>(&AnchorInThisBinary)};
  const std::string identity = BinaryIdentity(anchors);
  const size_t at = identity.find(":build-id=");
  ASSERT_NE(at, std::string::npos) << identity;
  const std::string id = identity.substr(at + 10);
  EXPECT_EQ(id.size(), 40u) << identity;  // sha1
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos)
      << identity;
  EXPECT_EQ(BinaryIdentity(anchors), identity);
}

// The C library has no build-id note on every system; whichever way it is
// identified, the identity names its file and is stable.
TEST(BinaryIdentity, NamesTheFileOfEachAnchorOnce) {
  const void* anchors[] = {reinterpret_cast<const void*>(&AnchorInThisBinary),
                           reinterpret_cast<const void*>(&AnchorInThisBinary)};
  const std::string identity = BinaryIdentity(anchors);
  EXPECT_EQ(identity.find(' '), std::string::npos) << identity;
  EXPECT_NE(identity.find("binary_identity_test"), std::string::npos)
      << identity;
}

}  // namespace
}  // namespace quadrants
