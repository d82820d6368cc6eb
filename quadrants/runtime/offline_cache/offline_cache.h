#ifndef QUADRANTS_RUNTIME_OFFLINE_CACHE_OFFLINE_CACHE_H_
#define QUADRANTS_RUNTIME_OFFLINE_CACHE_OFFLINE_CACHE_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "quadrants/artifact/compiled_kernel_data.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/print_format.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/offline_cache/eviction.h"

namespace quadrants::offline_cache {

// A stable hexadecimal key for `kernel` over `snodes`, compiled with the
// code-affecting `options` for `target` by the compiler `compiler_identity`
// names (its version and the files holding it, see BinaryIdentity), so a
// rebuilt Quadrants never reads another build's code.
std::string CacheKey(const ir::Kernel& kernel, const ir::SNodeTree& snodes,
                     absl::string_view options, absl::string_view target,
                     absl::string_view compiler_identity);

// The on-disk bytes of an entry, and back. Decoding checks the format, the
// key and a checksum, and validates every enum and size expression.
std::string EncodeEntry(absl::string_view key,
                        const CompiledKernelData& artifact);
absl::StatusOr<CompiledKernelData> DecodeEntry(absl::string_view key,
                                               absl::string_view bytes);

// One directory of entries, one file per key (kEntrySuffix), for the
// kernels of one compiler, with an index of their uses (eviction.h). Safe for any number of threads and processes at once: an entry
// is written to a temporary file of its writer's own and renamed into place,
// so a reader sees a whole entry or none, and a corrupt entry is deleted
// only while it is still the file that was read.
class OfflineCache {
 public:
  // `policy` decides what the session's end evicts (SessionLog), when the
  // last copy of this cache is gone.
  explicit OfflineCache(std::string directory,
                        std::string compiler_identity = "",
                        EvictionPolicy policy = {});

  // $XDG_CACHE_HOME/quadrants/offline_cache, else ~/.cache/..., else /tmp.
  static std::string DefaultDirectory();

  const std::string& directory() const { return directory_; }
  std::string PathFor(absl::string_view key) const;
  // CacheKey with this cache's compiler.
  std::string Key(const ir::Kernel& kernel, const ir::SNodeTree& snodes,
                  absl::string_view options, absl::string_view target) const;

  // The entry for `key`, or nothing when absent. An unreadable or corrupt
  // entry is deleted, sets `*rejected`, and reads as absent, so the caller
  // recompiles.
  std::optional<CompiledKernelData> Load(absl::string_view key,
                                         bool* rejected = nullptr) const;
  // Writes the entry; failing to write only costs a later recompile, so the
  // caller may ignore the status.
  absl::Status Store(absl::string_view key,
                     const CompiledKernelData& artifact) const;
  // Deletes the temporary files older than `max_age` (left by writers that
  // died before renaming them); returns how many.
  int RemoveStaleTemporaries(std::chrono::seconds max_age) const;

 private:
  std::string directory_;
  std::string compiler_identity_;
  std::shared_ptr<SessionLog> log_;
};

// Temporary files older than this were left by a writer that died.
inline constexpr std::chrono::hours kStaleTemporaryAge{1};

// The cache `config` asks for, for kernels of the compiler
// `compiler_identity` names (nothing when caching is off, or when that
// identity is empty: it could not be read), its directory noted in `stats`.
std::optional<OfflineCache> OpenOfflineCache(
    const CompileConfig& config, const std::string& compiler_identity,
    OfflineCacheStats* stats);

// Whether `key` has the form of CacheKey's keys (lowercase hexadecimal), so
// a key handed in from outside names a file in the cache directory only.
bool IsCacheKey(absl::string_view key);

// The entry for `key`, loaded by `load` (see LoadOrGenerate), or nothing
// when `cache` is null, the key is malformed, or the entry is absent or
// rejected (`stats` counts hits and rejections).
template <typename Loaded>
std::optional<std::pair<CompiledKernelData, Loaded>> LoadExisting(
    const OfflineCache* cache, const std::string& key, OfflineCacheStats* stats,
    absl::FunctionRef<absl::StatusOr<Loaded>(const CompiledKernelData&)> load) {
  if (cache == nullptr || !IsCacheKey(key))
    return std::nullopt;
  bool rejected = false;
  std::optional<CompiledKernelData> hit = cache->Load(key, &rejected);
  if (hit) {
    absl::StatusOr<Loaded> loaded = load(*hit);
    if (loaded.ok()) {
      ++stats->hits;
      return std::make_pair(*std::move(hit), *std::move(loaded));
    }
    rejected = true;
  }
  stats->rejected += rejected;
  return std::nullopt;
}

// A backend's compile through the cache: the entry for `key` when `cache`
// (null: caching is off) has one that `load` accepts (`load` makes the
// backend's loaded form, e.g. JIT-linked code or a GPU module), else what
// `generate` makes, loaded and stored for later runs. `stats` counts hits,
// misses, rejected entries and failed stores.
template <typename Loaded>
absl::StatusOr<std::pair<CompiledKernelData, Loaded>> LoadOrGenerate(
    const OfflineCache* cache, const std::string& key, OfflineCacheStats* stats,
    absl::FunctionRef<absl::StatusOr<CompiledKernelData>()> generate,
    absl::FunctionRef<absl::StatusOr<Loaded>(const CompiledKernelData&)> load) {
  if (auto hit = LoadExisting<Loaded>(cache, key, stats, load))
    return *std::move(hit);
  absl::StatusOr<CompiledKernelData> artifact = generate();
  if (!artifact.ok())
    return artifact.status();
  absl::StatusOr<Loaded> loaded = load(*artifact);
  if (!loaded.ok())
    return loaded.status();
  if (cache != nullptr) {
    ++stats->misses;
    if (absl::Status stored = cache->Store(key, *artifact); !stored.ok()) {
      ++stats->store_failures;
      stats->last_store_error = std::string(stored.message());
    }
  }
  return std::make_pair(*std::move(artifact), *std::move(loaded));
}

}  // namespace quadrants::offline_cache

#endif  // QUADRANTS_RUNTIME_OFFLINE_CACHE_OFFLINE_CACHE_H_
