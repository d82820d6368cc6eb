// The offline cache's index and eviction (SessionLog): what each policy
// keeps when a session ends over budget, and the index that records it.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "quadrants/runtime/offline_cache/eviction.h"

namespace quadrants::offline_cache {
namespace {

namespace fs = std::filesystem;

class EvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& key) {
    std::ofstream(dir_ / (key + kEntrySuffix)) << std::string(100, 'x');
  }
  // A session of build `identity` that writes `stored` then uses `used`.
  int Session(EvictionPolicy policy, const std::vector<std::string>& stored,
              const std::vector<std::string>& used = {},
              const std::string& identity = "build A") {
    SessionLog log(dir_.string(), identity, policy);
    for (const std::string& key : stored) {
      Write(key);
      log.Stored(key);
    }
    for (const std::string& key : used)
      log.Used(key);
    return log.End();
  }
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name != kIndexName)
        out.push_back(name.substr(0, name.size() - 4));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  bool HasIndex() const { return fs::exists(dir_ / kIndexName); }

  static EvictionPolicy Over(EvictionPolicy::Kind kind, double factor) {
    return EvictionPolicy{kind, /*max_bytes=*/1, factor};
  }
  static constexpr EvictionPolicy kRoomy{EvictionPolicy::Kind::kLru,
                                         int64_t{1} << 30, 0.5};

  fs::path dir_;
};

using Kind = EvictionPolicy::Kind;
using Keys = std::vector<std::string>;

TEST_F(EvictionTest, UnderBudgetNothingIsEvictedAndTheIndexIsWritten) {
  EXPECT_EQ(Session(kRoomy, {"k0", "k1", "k2"}), 0);
  EXPECT_EQ(Entries(), (Keys{"k0", "k1", "k2"}));
  EXPECT_TRUE(HasIndex());
}

TEST_F(EvictionTest, LruDropsTheLeastRecentlyUsedShare) {
  Session(kRoomy, {"k0", "k1", "k2", "k3"});
  Session(kRoomy, {}, {"k0"});  // k0 becomes the most recently used
  EXPECT_EQ(Session(Over(Kind::kLru, 0.5), {}), 2);
  EXPECT_EQ(Entries(), (Keys{"k0", "k3"}));
}

TEST_F(EvictionTest, FifoDropsTheOldestShareWhateverTheirUse) {
  Session(kRoomy, {"k0", "k1", "k2", "k3"});
  Session(kRoomy, {}, {"k0"});
  EXPECT_EQ(Session(Over(Kind::kFifo, 0.5), {}), 2);
  EXPECT_EQ(Entries(), (Keys{"k2", "k3"}));
}

TEST_F(EvictionTest, TheShareRoundsDownAndAllOfThemRemovesTheIndex) {
  Session(kRoomy, {"k0", "k1", "k2"});
  EXPECT_EQ(Session(Over(Kind::kLru, 0.5), {}), 1);  // floor(1.5)
  EXPECT_EQ(Entries(), (Keys{"k1", "k2"}));
  EXPECT_EQ(Session(Over(Kind::kLru, 0.0), {}), 0);
  EXPECT_EQ(Session(Over(Kind::kFifo, 1.0), {}), 2);
  EXPECT_EQ(Entries(), Keys{});
  EXPECT_FALSE(HasIndex());
}

TEST_F(EvictionTest, NeverKeepsEverythingAndVersionDropsOtherBuilds) {
  Session(kRoomy, {"old0", "old1"}, {}, "build A");
  Session(kRoomy, {"new0"}, {}, "build B");
  EXPECT_EQ(Session(Over(Kind::kNever, 1.0), {}, {}, "build B"), 0);
  EXPECT_EQ(Entries(), (Keys{"new0", "old0", "old1"}));
  EXPECT_EQ(Session(Over(Kind::kVersion, 0.0), {}, {}, "build B"), 2);
  EXPECT_EQ(Entries(), Keys{"new0"});
}

TEST_F(EvictionTest, EntriesTheIndexMissesAreIndexedFromTheirFiles) {
  Write("stray");  // a process that never ended its session wrote it
  Session(kRoomy, {"k0"});
  // The stray entry counts as another build's: version evicts it.
  EXPECT_EQ(Session(Over(Kind::kVersion, 0.0), {}), 1);
  EXPECT_EQ(Entries(), Keys{"k0"});
}

TEST(EvictionPolicy, ParsesTheFourNamesAndRejectsOthers) {
  EXPECT_EQ(*ParseEvictionKind("never"), Kind::kNever);
  EXPECT_EQ(*ParseEvictionKind("version"), Kind::kVersion);
  EXPECT_EQ(*ParseEvictionKind("lru"), Kind::kLru);
  EXPECT_EQ(*ParseEvictionKind("fifo"), Kind::kFifo);
  EXPECT_FALSE(ParseEvictionKind("random").ok());
}

}  // namespace
}  // namespace quadrants::offline_cache
