#ifndef QUADRANTS_RUNTIME_OFFLINE_CACHE_EVICTION_H_
#define QUADRANTS_RUNTIME_OFFLINE_CACHE_EVICTION_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace quadrants::offline_cache {

// The file naming an entry (its key, then this) and the directory's index.
inline constexpr char kEntrySuffix[] = ".qdc";
inline constexpr char kIndexName[] = "qdcache.qdb";

// What a cache keeps when a session ends with its entries over `max_bytes`:
// every entry (kNever), the entries this build wrote (kVersion), or all but
// floor(factor * entries), dropping the least recently used (kLru) or the
// oldest (kFifo) first.
struct EvictionPolicy {
  enum class Kind { kNever, kVersion, kLru, kFifo };
  Kind kind = Kind::kLru;
  int64_t max_bytes = int64_t{100} << 20;
  double factor = 0.25;
};

// offline_cache_cleaning_policy's value ("never", "version", "lru", "fifo").
absl::StatusOr<EvictionPolicy::Kind> ParseEvictionKind(absl::string_view name);

// One session's uses of a cache directory, in order: End() (at the latest
// on destruction) merges them into the directory's index, which records per
// entry its bytes, when it was written and last used, and which build wrote
// it; evicts what the policy says; and rewrites the index whole (removing
// it once no entry is left). Entries the index does not know (written by a
// process that never ended its session) are indexed from their files.
// Several processes may end sessions at once: the last index written wins,
// and the next session indexes whatever it missed from the files again.
class SessionLog {
 public:
  SessionLog(std::string directory, std::string identity, EvictionPolicy policy);
  ~SessionLog();
  SessionLog(const SessionLog&) = delete;
  SessionLog& operator=(const SessionLog&) = delete;

  void Stored(absl::string_view key);
  void Used(absl::string_view key);
  // Returns how many entries were evicted.
  int End();

 private:
  struct Use {
    int64_t written = 0;  // ns since the epoch; 0: not written this session
    int64_t used = 0;
  };
  int64_t Stamp();

  const std::string directory_;
  const std::string identity_;
  const EvictionPolicy policy_;
  std::mutex mutex_;
  std::map<std::string, Use> uses_;
  int64_t last_stamp_ = 0;
  bool ended_ = false;
};

}  // namespace quadrants::offline_cache

#endif  // QUADRANTS_RUNTIME_OFFLINE_CACHE_EVICTION_H_
