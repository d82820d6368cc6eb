#include "quadrants/runtime/offline_cache/offline_cache.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "quadrants/ir/size_expr.h"
#include "quadrants/runtime/offline_cache/compiled_kernel_data.pb.h"

namespace quadrants::offline_cache {
namespace {

using ir::SizeExpr;

CompiledKernelData SampleArtifact() {
  CompiledKernelData artifact;
  artifact.binary = std::string(
      "\x7f"
      "ELF object bytes \0 with a zero",
      30);
  CompiledTask serial;
  serial.kind = ir::TaskKind::kSerial;
  serial.function = "task_0";
  artifact.tasks.push_back(serial);
  CompiledTask loop;
  loop.kind = ir::TaskKind::kRangeFor;
  loop.function = "task_1";
  loop.bounds_function = "task_1_bounds";
  loop.loc = {"sim.py", 12};
  AdStackSpec exact{
      ir::PrimitiveType::kF64, 16, 12, nullptr, {"sim.py", 14}};
  AdStackSpec launch_sized{
      ir::PrimitiveType::kI32,
      4,
      0,
      SizeExpr::Add(SizeExpr::MaxOverRange(
                        0, SizeExpr::Const(0), SizeExpr::NdarrayShape(1, 0),
                        SizeExpr::NdarrayRead(1, {SizeExpr::BoundVar(0)})),
                    SizeExpr::Const(2)),
      {"sim.py", 15}};
  loop.adstacks = {exact, launch_sized};
  artifact.tasks.push_back(loop);
  artifact.error_sites.push_back(
      {"ndarray 'a' (argument 0)",
       {"sim.py", 16},
       {ir::PrimitiveType::kF64, ir::PrimitiveType::kI32}});
  artifact.print_sites.push_back(
      {{"x = ", ", n = ", "\n"},
       {"%.3e", ""},
       {ir::PrimitiveType::kF32, ir::PrimitiveType::kI64},
       {"sim.py", 17}});
  LaunchFacts& facts = artifact.facts;
  facts.kernel_name = "step";
  facts.params = {ir::KernelParam::Ndarray("a", ir::PrimitiveType::kF32, 2),
                  ir::KernelParam::Scalar("n", ir::PrimitiveType::kI32)};
  facts.written_args = {0};
  facts.written_snodes = {3};
  facts.draws_random = true;
  facts.uses_fields = true;
  ir::AdStackGate gate;
  gate.id = 0;
  gate.dtype = ir::PrimitiveType::kF32;
  gate.indices = {{ir::AdStackGateIndex::Kind::kLoopDigit, 0, 4, 8, 0},
                  {ir::AdStackGateIndex::Kind::kConst, 1, 1, 0, 2}};
  gate.op = ir::BinaryOpKind::kGe;
  gate.threshold = 0.5;
  gate.label = "a";
  facts.adstack_gates = {absl::nullopt, gate};
  return artifact;
}

void ExpectSameFacts(const LaunchFacts& a, const LaunchFacts& b) {
  EXPECT_EQ(a.kernel_name, b.kernel_name);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t k = 0; k < a.params.size(); ++k) {
    EXPECT_EQ(a.params[k].kind, b.params[k].kind);
    EXPECT_EQ(a.params[k].name, b.params[k].name);
    EXPECT_EQ(a.params[k].dtype, b.params[k].dtype);
    EXPECT_EQ(a.params[k].ndim, b.params[k].ndim);
  }
  EXPECT_EQ(a.written_args, b.written_args);
  EXPECT_EQ(a.written_snodes, b.written_snodes);
  EXPECT_EQ(a.draws_random, b.draws_random);
  EXPECT_EQ(a.uses_fields, b.uses_fields);
  ASSERT_EQ(a.adstack_gates.size(), b.adstack_gates.size());
  for (size_t t = 0; t < a.adstack_gates.size(); ++t) {
    ASSERT_EQ(a.adstack_gates[t].has_value(), b.adstack_gates[t].has_value());
    if (a.adstack_gates[t])
      EXPECT_EQ(a.adstack_gates[t]->ToString(), b.adstack_gates[t]->ToString());
  }
}

void ExpectSame(const CompiledKernelData& a, const CompiledKernelData& b) {
  EXPECT_EQ(a.binary, b.binary);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t t = 0; t < a.tasks.size(); ++t) {
    const auto& x = a.tasks[t];
    const auto& y = b.tasks[t];
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.function, y.function);
    EXPECT_EQ(x.bounds_function, y.bounds_function);
    EXPECT_EQ(x.loc.ToString(), y.loc.ToString());
    ASSERT_EQ(x.adstacks.size(), y.adstacks.size());
    for (size_t s = 0; s < x.adstacks.size(); ++s) {
      EXPECT_EQ(x.adstacks[s].dtype, y.adstacks[s].dtype);
      EXPECT_EQ(x.adstacks[s].slot_bytes, y.adstacks[s].slot_bytes);
      EXPECT_EQ(x.adstacks[s].static_capacity, y.adstacks[s].static_capacity);
      EXPECT_EQ(x.adstacks[s].loc.ToString(), y.adstacks[s].loc.ToString());
      ASSERT_EQ(x.adstacks[s].size_expr == nullptr,
                y.adstacks[s].size_expr == nullptr);
      if (x.adstacks[s].size_expr) {
        EXPECT_TRUE(x.adstacks[s].size_expr->Equals(*y.adstacks[s].size_expr))
            << y.adstacks[s].size_expr->ToString();
      }
    }
  }
  ASSERT_EQ(a.error_sites.size(), b.error_sites.size());
  EXPECT_EQ(a.error_sites[0].description, b.error_sites[0].description);
  EXPECT_EQ(a.error_sites[0].loc.ToString(), b.error_sites[0].loc.ToString());
  EXPECT_EQ(a.error_sites[0].value_types, b.error_sites[0].value_types);
  ASSERT_EQ(a.print_sites.size(), b.print_sites.size());
  for (size_t k = 0; k < a.print_sites.size(); ++k) {
    EXPECT_EQ(a.print_sites[k].pieces, b.print_sites[k].pieces);
    EXPECT_EQ(a.print_sites[k].specs, b.print_sites[k].specs);
    EXPECT_EQ(a.print_sites[k].types, b.print_sites[k].types);
    EXPECT_EQ(a.print_sites[k].loc.ToString(), b.print_sites[k].loc.ToString());
  }
  ExpectSameFacts(a.facts, b.facts);
}

TEST(OfflineCacheEntry, RoundTripsEveryField) {
  const CompiledKernelData artifact = SampleArtifact();
  auto decoded = DecodeEntry("k1", EncodeEntry("k1", artifact));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExpectSame(artifact, *decoded);
}

TEST(OfflineCacheEntry, RejectsAPrintSpecTheHostCouldNotFormatSafely) {
  CompiledKernelData artifact = SampleArtifact();
  artifact.print_sites[0].specs[0] = "%s";  // would read a string pointer
  auto decoded = DecodeEntry("k1", EncodeEntry("k1", artifact));
  EXPECT_FALSE(decoded.ok());
}

TEST(OfflineCacheEntry, RejectsAGateThatIsNotAComparison) {
  CompiledKernelData artifact = SampleArtifact();
  artifact.facts.adstack_gates[1]->op = ir::BinaryOpKind::kAdd;
  EXPECT_FALSE(DecodeEntry("k1", EncodeEntry("k1", artifact)).ok());
}

TEST(OfflineCacheEntry, RejectsAWrittenParameterTheKernelLacks) {
  CompiledKernelData artifact = SampleArtifact();
  artifact.facts.written_args = {2};  // the kernel has two parameters
  EXPECT_FALSE(DecodeEntry("k1", EncodeEntry("k1", artifact)).ok());
}

TEST(OfflineCache, LoadsOnlyKeysOfItsOwnForm) {
  const std::string dir = ::testing::TempDir() + "/qd_cache_key_form";
  std::filesystem::remove_all(dir);
  OfflineCache cache(dir);
  const std::string key = "0123456789abcdef0123456789abcdef";
  ASSERT_TRUE(cache.Store(key, SampleArtifact()).ok());
  EXPECT_TRUE(IsCacheKey(key));
  EXPECT_FALSE(IsCacheKey(""));
  EXPECT_FALSE(IsCacheKey("../" + key));
  EXPECT_FALSE(IsCacheKey("0123456789ABCDEF"));
  OfflineCacheStats stats;
  auto identity = [](const CompiledKernelData& a) -> absl::StatusOr<int> {
    return static_cast<int>(a.tasks.size());
  };
  auto hit = LoadExisting<int>(&cache, key, &stats, identity);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->second, 2);
  ExpectSameFacts(SampleArtifact().facts, hit->first.facts);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_FALSE(LoadExisting<int>(&cache, "../x", &stats, identity));
  EXPECT_FALSE(LoadExisting<int>(&cache, "00ff", &stats, identity));
  EXPECT_FALSE(LoadExisting<int>(nullptr, key, &stats, identity));
  std::filesystem::remove_all(dir);
}

TEST(OfflineCacheEntry, RejectsEveryTruncation) {
  const std::string bytes = EncodeEntry("k1", SampleArtifact());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeEntry("k1", bytes.substr(0, n)).ok()) << "length " << n;
  }
}

TEST(OfflineCacheEntry, RejectsEveryFlippedByte) {
  const std::string bytes = EncodeEntry("k1", SampleArtifact());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
    auto decoded = DecodeEntry("k1", damaged);
    // A flip may only survive where it cannot change meaning; none can here
    // because the checksum covers the artifact and the key is compared.
    EXPECT_FALSE(decoded.ok()) << "byte " << i;
  }
}

TEST(OfflineCacheEntry, RejectsAnotherKeysEntry) {
  EXPECT_FALSE(DecodeEntry("k2", EncodeEntry("k1", SampleArtifact())).ok());
}

TEST(OfflineCache, StoresLoadsAndDeletesCorruptEntries) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/qd_cache_", getpid());
  OfflineCache cache(dir + "/nested");
  bool rejected = true;
  EXPECT_FALSE(cache.Load("abc", &rejected).has_value());
  EXPECT_FALSE(rejected);
  ASSERT_TRUE(cache.Store("abc", SampleArtifact()).ok());
  auto loaded = cache.Load("abc", &rejected);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_FALSE(rejected);
  ExpectSame(SampleArtifact(), *loaded);

  std::filesystem::resize_file(cache.PathFor("abc"), 10);
  EXPECT_FALSE(cache.Load("abc", &rejected).has_value());
  EXPECT_TRUE(rejected);
  EXPECT_FALSE(std::filesystem::exists(cache.PathFor("abc")));
  std::filesystem::remove_all(dir);
}

TEST(OfflineCache, StoreIntoAFileReportsAnError) {
  const std::string file =
      absl::StrCat(::testing::TempDir(), "/qd_cache_file_", getpid());
  std::ofstream(file) << "not a directory";
  OfflineCache cache(file + "/cache");
  EXPECT_FALSE(cache.Store("abc", SampleArtifact()).ok());
  std::remove(file.c_str());
}

TEST(OfflineCacheEntry, RejectsAnEntryOfTheEarlierFormat) {
  // An entry as the previous format wrote it: same layout, format 1, a
  // valid checksum. It must read as corrupt rather than be misread.
  proto::CacheEntry entry;
  ASSERT_TRUE(entry.ParseFromString(EncodeEntry("k1", SampleArtifact())));
  entry.set_format(1);
  auto decoded = DecodeEntry("k1", entry.SerializeAsString());
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("format 1"), std::string::npos)
      << decoded.status();
}

// An artifact whose large binary is `fill` repeated, so an entry mixing
// two writers' bytes shows.
CompiledKernelData FilledArtifact(char fill) {
  CompiledKernelData artifact = SampleArtifact();
  artifact.binary = std::string(1 << 20, fill);
  return artifact;
}

// Stores and loads `keys` `rounds` times, as one of several writers; false
// when a load saw a rejected (partial or mixed) entry or a store failed.
bool HammerCache(const OfflineCache& cache, char fill, int rounds) {
  const std::vector<std::string> keys = {"k0", "k1"};
  for (int round = 0; round < rounds; ++round) {
    for (const std::string& key : keys) {
      if (!cache.Store(key, FilledArtifact(fill)).ok())
        return false;
      bool rejected = false;
      std::optional<CompiledKernelData> loaded = cache.Load(key, &rejected);
      if (rejected || !loaded || loaded->binary.size() != (1u << 20) ||
          loaded->binary.find_first_not_of(loaded->binary[0]) !=
              std::string::npos) {
        return false;
      }
    }
  }
  return true;
}

TEST(OfflineCache, ConcurrentProcessesAndThreadsSeeOnlyWholeEntries) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/qd_cache_concurrent_", getpid());
  OfflineCache cache(dir);
  constexpr int kRounds = 8;
  // Processes first: forking once threads run is unsafe.
  std::vector<pid_t> children;
  for (char fill : {'p', 'q'}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0)
      _exit(HammerCache(cache, fill, kRounds) ? 0 : 1);
    children.push_back(child);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (char fill : {'a', 'b', 'c'}) {
    threads.emplace_back([&, fill] {
      failures += !HammerCache(cache, fill, kRounds);
    });
  }
  for (std::thread& t : threads)
    t.join();
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a writer process saw a partial entry or failed to store";
  }
  EXPECT_EQ(failures.load(), 0) << "a writer thread saw a partial entry";
  // Every temporary file was renamed into place or deleted (the index of
  // the writers' uses aside).
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename() != kIndexName)
      names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"k0.qdc", "k1.qdc"}));
  std::filesystem::remove_all(dir);
}

TEST(OfflineCache, RemovesOnlyStaleTemporaries) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/qd_cache_stale_", getpid());
  OfflineCache cache(dir);
  ASSERT_TRUE(cache.Store("abc", SampleArtifact()).ok());
  const std::string stale = cache.PathFor("abc") + ".tmp.1.00.0";
  const std::string fresh = cache.PathFor("abc") + ".tmp.2.00.0";
  const std::string unrelated = dir + "/notes.tmp.1";
  for (const std::string& path : {stale, fresh, unrelated})
    std::ofstream(path) << "partial";
  const auto two_hours_ago =
      std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(stale, two_hours_ago);
  std::filesystem::last_write_time(unrelated, two_hours_ago);

  EXPECT_EQ(cache.RemoveStaleTemporaries(std::chrono::hours(1)), 1);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  EXPECT_TRUE(std::filesystem::exists(unrelated));  // not the cache's
  EXPECT_TRUE(cache.Load("abc").has_value());
  std::filesystem::remove_all(dir);
}

TEST(OfflineCache, KeysDependOnTheCompilerIdentity) {
  ir::Kernel kernel("k");
  ir::SNodeTree snodes;
  const std::string a = CacheKey(kernel, snodes, "opts", "target", "llvm 1");
  EXPECT_EQ(a, CacheKey(kernel, snodes, "opts", "target", "llvm 1"));
  EXPECT_NE(a, CacheKey(kernel, snodes, "opts", "target", "llvm 2"));
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(OfflineCache("/tmp/x", "llvm 1").Key(kernel, snodes, "opts",
                                                 "target"),
            a);
}

// A sparse layout keys the cache like a dense one: another kind of level,
// or another pool capacity (qd.init(sparse_pool_mb=...)), another key.
TEST(OfflineCache, KeysDependOnSparseLayoutsAndPools) {
  ir::Kernel kernel("k");
  auto tree = [](ir::SNode::Kind kind, int64_t budget) {
    ir::SNodeTree snodes;
    snodes.set_pool_budget(budget);
    const int level = *snodes.AddSparse(0, kind, {0}, {64});
    EXPECT_TRUE(snodes.AddPlace(level, ir::PrimitiveType::kF32, "x").ok());
    EXPECT_TRUE(snodes.Finalize().ok());
    return snodes;
  };
  const ir::SNodeTree pointer = tree(ir::SNode::Kind::kPointer, 0);
  const std::string a = CacheKey(kernel, pointer, "o", "t", "c");
  EXPECT_EQ(a, CacheKey(kernel, tree(ir::SNode::Kind::kPointer, 0), "o", "t",
                        "c"));
  EXPECT_NE(a, CacheKey(kernel, tree(ir::SNode::Kind::kBitmasked, 0), "o",
                        "t", "c"));
  EXPECT_NE(a, CacheKey(kernel, tree(ir::SNode::Kind::kPointer, 64), "o", "t",
                        "c"));
}

}  // namespace
}  // namespace quadrants::offline_cache
