#include "quadrants/runtime/offline_cache/offline_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/options.h"
#include "quadrants/common/stable_hash.h"
#include "quadrants/ir/hash.h"
#include "quadrants/ir/printer.h"
#include "quadrants/runtime/offline_cache/compiled_kernel_data.pb.h"
#include "quadrants/runtime/offline_cache/launch_facts_codec.h"

namespace quadrants::offline_cache {
namespace {

// Bumped whenever the entry layout or its meaning changes, so entries of
// another format are rejected (and recompiled), never misread.
constexpr uint32_t kFormat = 6;
constexpr const char* kSuffix = kEntrySuffix;
// Between an entry's name and the unique tail of its temporary files.
constexpr char kTemporaryInfix[] = ".tmp.";

// Closes a file descriptor when it goes out of scope.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0)
      close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  // Closes now; false when close reports an error (a failed write-back).
  bool Close() {
    const int fd = fd_;
    fd_ = -1;
    return close(fd) == 0;
  }

 private:
  int fd_;
};

// The rest of the file `fd` reads, or nothing on a read error.
std::optional<std::string> ReadAll(int fd) {
  std::string contents;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n == 0)
      return contents;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return std::nullopt;
    }
    contents.append(chunk, static_cast<size_t>(n));
  }
}

bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// A name next to `path` that no other writer picks: this process's id, a
// random salt (processes in different pid namespaces may share the
// directory) and a counter (threads of this process).
std::string UniqueSibling(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return absl::StrFormat("%s%s%d.%016x.%d", path, kTemporaryInfix, getpid(),
                         salt, counter++);
}

// Deletes the rejected entry at `path` only if it is still the file `fd`
// read: another process may have renamed a fresh entry into place since,
// and that one stays. The entry is moved aside in one atomic step and the
// check is made on what was moved, so it races with no rename; `fd` stays
// open meanwhile, so the read file's inode cannot be reused.
void RemoveRejectedEntry(const std::string& path, int fd) {
  struct stat read_file;
  if (fstat(fd, &read_file) != 0)
    return;
  const std::string aside = UniqueSibling(path);
  if (std::rename(path.c_str(), aside.c_str()) != 0)
    return;  // already gone
  struct stat moved;
  if (stat(aside.c_str(), &moved) == 0 && moved.st_dev == read_file.st_dev &&
      moved.st_ino == read_file.st_ino) {
    unlink(aside.c_str());
    return;
  }
  // Writers rename only complete entries into place, so what was moved is
  // a fresh one: put it back (over any other fresh entry for this key that
  // has landed meanwhile, which is as good).
  if (std::rename(aside.c_str(), path.c_str()) != 0)
    unlink(aside.c_str());
}

uint64_t Checksum(absl::string_view s) {
  return StableHash64(s);
}

}  // namespace

namespace {

void DescribeSNodes(const ir::SNodeTree& snodes, std::string* out) {
  for (int id = 0; id < snodes.size(); ++id) {
    const ir::SNode& n = snodes.node(id);
    absl::StrAppend(out, "snode ", id, " kind=", static_cast<int>(n.kind),
                    " parent=", n.parent, " dtype=", static_cast<int>(n.dtype),
                    " name=", n.name, " grad=", n.is_grad, ",", n.grad_snode,
                    ",", n.needs_grad, ",", n.primal_snode,
                    " dual=", n.dual_snode, " bytes=", n.cell_bytes, "@",
                    n.offset_in_parent, " axes=");
    for (int a : n.axes)
      absl::StrAppend(out, a, ",");
    absl::StrAppend(out, " sizes=");
    for (int64_t s : n.sizes)
      absl::StrAppend(out, s, ",");
    // Sparse levels: their hidden places and the pool kernels address.
    absl::StrAppend(out, " sparse=", n.table, ",", n.length, ",", n.list, ",",
                    n.list_count, ",", n.chunk_size, ",", n.hidden,
                    " pool=", n.pool_offset, ",", n.pool_blocks, ",",
                    n.block_bytes, ",", n.pool_state_offset, "\n");
  }
}

void ToProto(const SourceLocation& loc, proto::Location* out) {
  out->set_file(loc.file);
  out->set_line(loc.line);
}

SourceLocation FromProto(const proto::Location& loc) {
  return SourceLocation{loc.file(), loc.line()};
}

absl::Status Corrupt(absl::string_view what) {
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat("corrupt offline cache entry: ", what));
}

absl::StatusOr<ir::PrimitiveType> DecodeType(int32_t value) {
  if (value < 0 || value > static_cast<int32_t>(ir::PrimitiveType::kF64))
    return Corrupt(absl::StrCat("type ", value));
  return static_cast<ir::PrimitiveType>(value);
}

absl::StatusOr<AdStackSpec> DecodeStack(const proto::AdStack& in) {
  AdStackSpec out;
  auto dtype = DecodeType(in.dtype());
  if (!dtype.ok())
    return dtype.status();
  out.dtype = *dtype;
  if (in.slot_bytes() <= 0 || in.static_capacity() < 0)
    return Corrupt("adstack sizes");
  out.slot_bytes = in.slot_bytes();
  out.static_capacity = in.static_capacity();
  if (!in.size_expr().empty()) {
    auto expr = ir::DeserializeSizeExpr(in.size_expr());
    if (!expr.ok())
      return Corrupt(expr.status().message());
    out.size_expr = *std::move(expr);
  }
  out.loc = FromProto(in.loc());
  if (in.checkpoint_group() < -1)
    return Corrupt("adstack checkpoint group");
  out.checkpoint_group = in.checkpoint_group();
  out.checkpoints = in.checkpoints();
  return out;
}

absl::StatusOr<CompiledTask> DecodeTask(const proto::Task& in) {
  if (in.kind() < 0 ||
      in.kind() > static_cast<int32_t>(ir::TaskKind::kStructFor)) {
    return Corrupt(absl::StrCat("task kind ", in.kind()));
  }
  if (in.function().empty())
    return Corrupt("task without a function");
  CompiledTask out;
  out.kind = static_cast<ir::TaskKind>(in.kind());
  out.function = in.function();
  out.bounds_function = in.bounds_function();
  out.struct_for_cells = in.struct_for_cells();
  out.simd_lanes = in.simd_lanes();
  if (in.graph_region() < -1 || in.graph_section() < -1)
    return Corrupt("task graph section");
  out.graph_region = in.graph_region();
  out.graph_section = in.graph_section();
  if (in.block_dim() < 0 || in.shared_bytes() < 0)
    return Corrupt("task block shape");
  out.block_dim = in.block_dim();
  out.shared_bytes = in.shared_bytes();
  out.loc = FromProto(in.loc());
  for (const proto::AdStack& stack : in.adstacks()) {
    auto spec = DecodeStack(stack);
    if (!spec.ok())
      return spec.status();
    out.adstacks.push_back(*std::move(spec));
  }
  return out;
}

}  // namespace

std::string CacheKey(const ir::Kernel& kernel, const ir::SNodeTree& snodes,
                     absl::string_view options, absl::string_view target,
                     absl::string_view compiler_identity) {
  ir::PrintOptions print;
  print.locations = true;
  std::string text = absl::StrCat(
      "format ", kFormat, "\ncompiler ", compiler_identity, "\ntarget ",
      target, "\noptions ", options, "\nkernel ", kernel.name(), "\n");
  // The printed form carries locations (error messages quote them); the
  // structural hash guards against any attribute the printer leaves out.
  absl::StrAppend(&text, "structure ", ir::StructuralHash(kernel), "\n",
                  ir::PrintKernel(kernel, print));
  DescribeSNodes(snodes, &text);
  return StableHash128Hex(text);
}

std::string EncodeEntry(absl::string_view key, const CompiledKernelData& artifact) {
  proto::CompiledKernelData message;
  message.set_binary(artifact.binary);
  for (const CompiledTask& task : artifact.tasks) {
    proto::Task* t = message.add_tasks();
    t->set_kind(static_cast<int32_t>(task.kind));
    t->set_function(task.function);
    t->set_bounds_function(task.bounds_function);
    t->set_struct_for_cells(task.struct_for_cells);
    t->set_simd_lanes(task.simd_lanes);
    t->set_graph_region(task.graph_region);
    t->set_graph_section(task.graph_section);
    t->set_block_dim(task.block_dim);
    t->set_shared_bytes(task.shared_bytes);
    ToProto(task.loc, t->mutable_loc());
    for (const AdStackSpec& spec : task.adstacks) {
      proto::AdStack* s = t->add_adstacks();
      s->set_dtype(static_cast<int32_t>(spec.dtype));
      s->set_slot_bytes(spec.slot_bytes);
      s->set_static_capacity(spec.static_capacity);
      if (spec.size_expr)
        s->set_size_expr(ir::SerializeSizeExpr(*spec.size_expr));
      ToProto(spec.loc, s->mutable_loc());
      s->set_checkpoint_group(spec.checkpoint_group);
      s->set_checkpoints(spec.checkpoints);
    }
  }
  for (const ErrorSite& site : artifact.error_sites) {
    proto::ErrorSite* e = message.add_error_sites();
    e->set_description(site.description);
    ToProto(site.loc, e->mutable_loc());
    for (ir::PrimitiveType t : site.value_types)
      e->add_value_types(static_cast<int32_t>(t));
  }
  for (const ir::PrintSite& site : artifact.print_sites) {
    proto::PrintSite* p = message.add_print_sites();
    for (const std::string& piece : site.pieces)
      p->add_pieces(piece);
    for (const std::string& spec : site.specs)
      p->add_specs(spec);
    for (ir::PrimitiveType t : site.types)
      p->add_value_types(static_cast<int32_t>(t));
    ToProto(site.loc, p->mutable_loc());
  }
  EncodeLaunchFacts(artifact.facts, message.mutable_facts());
  proto::CacheEntry entry;
  entry.set_format(kFormat);
  entry.set_key(std::string(key));
  entry.set_artifact(message.SerializeAsString());
  entry.set_checksum(Checksum(entry.artifact()));
  return entry.SerializeAsString();
}

absl::StatusOr<CompiledKernelData> DecodeEntry(absl::string_view key,
                                           absl::string_view bytes) {
  proto::CacheEntry entry;
  if (!entry.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Corrupt("not a cache entry");
  if (entry.format() != kFormat)
    return Corrupt(absl::StrCat("format ", entry.format()));
  if (entry.key() != key)
    return Corrupt("key mismatch");
  if (entry.checksum() != Checksum(entry.artifact()))
    return Corrupt("checksum mismatch");
  proto::CompiledKernelData message;
  if (!message.ParseFromString(entry.artifact()))
    return Corrupt("unreadable artifact");
  // A kernel may have no tasks, but every kernel has target code.
  if (message.binary().empty())
    return Corrupt("no target code");
  CompiledKernelData out;
  out.binary = message.binary();
  for (const proto::Task& task : message.tasks()) {
    auto decoded = DecodeTask(task);
    if (!decoded.ok())
      return decoded.status();
    out.tasks.push_back(*std::move(decoded));
  }
  for (const proto::ErrorSite& site : message.error_sites()) {
    ErrorSite decoded{site.description(), FromProto(site.loc()), {}};
    for (int32_t t : site.value_types()) {
      auto type = DecodeType(t);
      if (!type.ok())
        return type.status();
      decoded.value_types.push_back(*type);
    }
    out.error_sites.push_back(std::move(decoded));
  }
  for (const proto::PrintSite& site : message.print_sites()) {
    ir::PrintSite decoded;
    decoded.pieces.assign(site.pieces().begin(), site.pieces().end());
    decoded.specs.assign(site.specs().begin(), site.specs().end());
    decoded.loc = FromProto(site.loc());
    for (int32_t t : site.value_types()) {
      auto type = DecodeType(t);
      if (!type.ok())
        return type.status();
      decoded.types.push_back(*type);
    }
    // The host hands specs to snprintf: only well-formed ones pass.
    if (!ir::IsValidPrintSite(decoded))
      return Corrupt("malformed print site");
    out.print_sites.push_back(std::move(decoded));
  }
  auto facts = DecodeLaunchFacts(message.facts());
  if (!facts.ok())
    return facts.status();
  out.facts = *std::move(facts);
  return out;
}

OfflineCache::OfflineCache(std::string directory,
                           std::string compiler_identity,
                           EvictionPolicy policy)
    : directory_(std::move(directory)),
      compiler_identity_(std::move(compiler_identity)),
      log_(std::make_shared<SessionLog>(directory_, compiler_identity_,
                                        policy)) {}

std::string OfflineCache::Key(const ir::Kernel& kernel,
                              const ir::SNodeTree& snodes,
                              absl::string_view options,
                              absl::string_view target) const {
  return CacheKey(kernel, snodes, options, target, compiler_identity_);
}

std::string OfflineCache::DefaultDirectory() {
  if (auto xdg = options::EnvText(options::Option::kXdgCacheHome))
    return absl::StrCat(*xdg, "/quadrants/offline_cache");
  if (auto home = options::EnvText(options::Option::kHome))
    return absl::StrCat(*home, "/.cache/quadrants/offline_cache");
  return absl::StrCat("/tmp/quadrants-", getuid(), "/offline_cache");
}

bool IsCacheKey(absl::string_view key) {
  return !key.empty() && key.size() <= 64 &&
         std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string OfflineCache::PathFor(absl::string_view key) const {
  return absl::StrCat(directory_, "/", key, kSuffix);
}

std::optional<CompiledKernelData> OfflineCache::Load(absl::string_view key,
                                                 bool* rejected) const {
  if (rejected != nullptr)
    *rejected = false;
  const std::string path = PathFor(key);
  // Entries are only ever renamed into place whole, so the open file is one
  // complete entry however many processes write this key meanwhile.
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return std::nullopt;
  std::optional<std::string> contents = ReadAll(fd.get());
  if (!contents)
    return std::nullopt;
  auto artifact = DecodeEntry(key, *contents);
  if (!artifact.ok()) {
    if (rejected != nullptr)
      *rejected = true;
    RemoveRejectedEntry(path, fd.get());
    return std::nullopt;
  }
  log_->Used(key);
  return *std::move(artifact);
}

absl::Status OfflineCache::Store(absl::string_view key,
                                 const CompiledKernelData& artifact) const {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("cannot create the offline cache directory ",
                                  directory_, ": ", error.message()));
  }
  const std::string path = PathFor(key);
  const std::string bytes = EncodeEntry(key, artifact);
  // A temporary file of this writer's own (O_EXCL: never one another
  // writer has open), renamed into place once complete: readers see the
  // old entry or the new one, never part of one.
  std::string temporary;
  int raw_fd = -1;
  for (int attempt = 0; attempt < 8 && raw_fd < 0; ++attempt) {
    temporary = UniqueSibling(path);
    raw_fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                  0666);
    if (raw_fd < 0 && errno != EEXIST)
      break;
  }
  if (raw_fd < 0) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("cannot create ", temporary, ": ",
                                  std::strerror(errno)));
  }
  ScopedFd fd(raw_fd);
  const bool written = WriteAll(fd.get(), bytes);
  if (!fd.Close() || !written) {
    const std::string reason = std::strerror(errno);
    unlink(temporary.c_str());
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("cannot write ", temporary, ": ", reason));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    unlink(temporary.c_str());
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("cannot rename ", temporary, " to ", path,
                                  ": ", reason));
  }
  log_->Stored(key);
  return absl::OkStatus();
}

int OfflineCache::RemoveStaleTemporaries(std::chrono::seconds max_age) const {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::directory_iterator it(directory_, error);
  if (error)
    return 0;
  const auto now = fs::file_time_type::clock::now();
  int removed = 0;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    if (error)
      break;
    const std::string name = it->path().filename().string();
    if (name.find(absl::StrCat(kSuffix, kTemporaryInfix)) == std::string::npos)
      continue;
    std::error_code ignored;
    const auto written = fs::last_write_time(it->path(), ignored);
    // A writer finishes within seconds; its own file is never this old.
    if (!ignored && now - written > max_age && fs::remove(it->path(), ignored))
      ++removed;
  }
  return removed;
}

std::optional<OfflineCache> OpenOfflineCache(
    const CompileConfig& config, const std::string& compiler_identity,
    OfflineCacheStats* stats) {
  if (!config.offline_cache || compiler_identity.empty())
    return std::nullopt;
  EvictionPolicy policy;
  // qd.init has checked the policy's name.
  policy.kind = ParseEvictionKind(config.offline_cache_cleaning_policy)
                    .value_or(EvictionPolicy::Kind::kLru);
  policy.max_bytes = config.offline_cache_max_size_of_files;
  policy.factor = config.offline_cache_cleaning_factor;
  // Entries live in a subdirectory of offline_cache_file_path, as
  // upstream's do.
  OfflineCache cache(absl::StrCat(config.offline_cache_file_path.empty()
                                      ? OfflineCache::DefaultDirectory()
                                      : config.offline_cache_file_path,
                                  "/kernel_compilation_manager"),
                     compiler_identity, policy);
  stats->directory = cache.directory();
  cache.RemoveStaleTemporaries(kStaleTemporaryAge);
  return cache;
}

}  // namespace quadrants::offline_cache
