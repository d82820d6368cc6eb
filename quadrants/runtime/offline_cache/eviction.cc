#include "quadrants/runtime/offline_cache/eviction.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/stable_hash.h"

namespace quadrants::offline_cache {
namespace {

namespace fs = std::filesystem;

constexpr char kIndexHeader[] = "quadrants offline cache index 1";

// One entry as the index records it.
struct Record {
  int64_t bytes = 0;
  int64_t written = 0;
  int64_t used = 0;
  std::string build;  // the writer's identity fingerprint; "-" when unknown
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t FileTimeNs(const fs::path& path) {
  std::error_code error;
  const auto written = fs::last_write_time(path, error);
  if (error)
    return 0;
  // file_time_type's clock is the system clock's on Linux (libstdc++).
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             written.time_since_epoch())
      .count();
}

std::map<std::string, Record> ReadIndex(const fs::path& path) {
  std::map<std::string, Record> records;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != kIndexHeader)
    return records;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    Record r;
    if (fields >> key >> r.bytes >> r.written >> r.used >> r.build)
      records[key] = r;
  }
  return records;
}

// The entries in `directory` now: key -> bytes and modification time.
std::map<std::string, Record> ListEntries(const fs::path& directory) {
  std::map<std::string, Record> found;
  std::error_code error;
  fs::directory_iterator it(directory, error);
  if (error)
    return found;
  const std::string suffix = kEntrySuffix;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    if (error)
      break;
    const std::string name = it->path().filename().string();
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;  // the index, temporaries
    std::error_code size_error;
    const auto bytes = fs::file_size(it->path(), size_error);
    if (size_error)
      continue;
    Record r;
    r.bytes = static_cast<int64_t>(bytes);
    r.written = r.used = FileTimeNs(it->path());
    r.build = "-";
    found[name.substr(0, name.size() - suffix.size())] = r;
  }
  return found;
}

// The keys `policy` evicts from `records` (whose bytes exceed its budget).
std::vector<std::string> Victims(const EvictionPolicy& policy,
                                 const std::map<std::string, Record>& records,
                                 const std::string& build) {
  std::vector<std::string> out;
  using Kind = EvictionPolicy::Kind;
  if (policy.kind == Kind::kNever)
    return out;
  if (policy.kind == Kind::kVersion) {
    for (const auto& [key, r] : records) {
      if (r.build != build)
        out.push_back(key);
    }
    return out;
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [key, r] : records)
    order.emplace_back(policy.kind == Kind::kLru ? r.used : r.written, key);
  std::sort(order.begin(), order.end());
  const size_t count = std::min(
      order.size(), static_cast<size_t>(policy.factor * order.size()));
  for (size_t i = 0; i < count; ++i)
    out.push_back(order[i].second);
  return out;
}

void WriteIndex(const fs::path& path,
                const std::map<std::string, Record>& records) {
  std::error_code ignored;
  if (records.empty()) {
    fs::remove(path, ignored);
    return;
  }
  // Written beside and renamed into place: readers see one whole index.
  const fs::path temporary =
      absl::StrFormat("%s.tmp.%d.%d", path.string(), getpid(), NowNs() & 0xffff);
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << kIndexHeader << "\n";
    for (const auto& [key, r] : records)
      out << key << " " << r.bytes << " " << r.written << " " << r.used << " "
          << r.build << "\n";
    if (!out.good()) {
      fs::remove(temporary, ignored);
      return;  // an index not written is rebuilt from the files next time
    }
  }
  fs::rename(temporary, path, ignored);
  if (ignored)
    fs::remove(temporary, ignored);
}

}  // namespace

absl::StatusOr<EvictionPolicy::Kind> ParseEvictionKind(absl::string_view name) {
  using Kind = EvictionPolicy::Kind;
  if (name == "never")
    return Kind::kNever;
  if (name == "version")
    return Kind::kVersion;
  if (name == "lru")
    return Kind::kLru;
  if (name == "fifo")
    return Kind::kFifo;
  return MakeError(ErrorKind::kType,
                   absl::StrCat("offline_cache_cleaning_policy must be never, "
                                "version, lru or fifo, got '",
                                name, "'"));
}

SessionLog::SessionLog(std::string directory, std::string identity,
                       EvictionPolicy policy)
    : directory_(std::move(directory)),
      identity_(StableHash128Hex(identity)),
      policy_(policy) {}

SessionLog::~SessionLog() { End(); }

int64_t SessionLog::Stamp() {
  // Strictly increasing, so uses in one session keep their order.
  last_stamp_ = std::max(NowNs(), last_stamp_ + 1);
  return last_stamp_;
}

void SessionLog::Stored(absl::string_view key) {
  std::lock_guard<std::mutex> lock(mutex_);
  Use& use = uses_[std::string(key)];
  use.written = use.used = Stamp();
}

void SessionLog::Used(absl::string_view key) {
  std::lock_guard<std::mutex> lock(mutex_);
  uses_[std::string(key)].used = Stamp();
}

int SessionLog::End() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ended_)
    return 0;
  ended_ = true;
  const fs::path directory(directory_);
  std::error_code error;
  if (!fs::is_directory(directory, error))
    return 0;  // nothing was ever stored
  const fs::path index = directory / kIndexName;
  const std::map<std::string, Record> known = ReadIndex(index);
  std::map<std::string, Record> records = ListEntries(directory);
  int64_t total = 0;
  for (auto& [key, r] : records) {
    if (auto it = known.find(key); it != known.end()) {
      r.written = it->second.written;
      r.used = it->second.used;
      r.build = it->second.build;
    }
    if (auto it = uses_.find(key); it != uses_.end()) {
      if (it->second.written != 0) {
        r.written = it->second.written;
        r.build = identity_;
      }
      r.used = std::max(r.used, it->second.used);
    }
    total += r.bytes;
  }
  int evicted = 0;
  if (total > policy_.max_bytes) {
    for (const std::string& key : Victims(policy_, records, identity_)) {
      std::error_code ignored;
      if (fs::remove(directory / (key + kEntrySuffix), ignored))
        ++evicted;
      records.erase(key);
    }
  }
  WriteIndex(index, records);
  return evicted;
}

}  // namespace quadrants::offline_cache
