#include "quadrants/codegen/amdgpu/lld_link.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/options.h"

extern char** environ;

namespace quadrants::codegen {
namespace {

// Runs `argv` with stdout and stderr in `log`; the exit status, or an error
// when it cannot start.
absl::StatusOr<int> Run(const std::vector<std::string>& argv,
                        const std::string& log) {
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return absl::InternalError(absl::StrCat("cannot run ", argv[0]));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return absl::InternalError(absl::StrCat("cannot wait for ", argv[0]));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A directory for one link's files, removed with them.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Create() {
    std::string pattern =
        absl::StrCat(options::EnvString(options::Option::kTmpdir),
                     "/quadrants_hsaco_XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr)
      return absl::InternalError("cannot create a temporary directory");
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  ~TempDir() {
    if (path_.empty())
      return;
    for (const char* name : {"/kernel.o", "/kernel.hsaco", "/lld.log"})
      unlink((path_ + name).c_str());
    rmdir(path_.c_str());
  }
  std::string File(const char* name) const { return path_ + "/" + name; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

absl::Status LinkError(absl::string_view what) {
  return MakeError(ErrorKind::kCompilation,
                   absl::StrCat("linking the AMDGPU code object: ", what));
}

}  // namespace

absl::StatusOr<std::string> FindLld() {
  std::vector<std::string> candidates;
  if (auto lld = options::EnvText(options::Option::kLld))
    candidates.push_back(*lld);
  candidates.push_back("/usr/lib/llvm-19/bin/ld.lld");
  candidates.push_back("/usr/bin/ld.lld-19");
  for (const std::string& path : candidates) {
    if (access(path.c_str(), X_OK) == 0)
      return path;
  }
  return absl::NotFoundError(absl::StrCat(
      "ld.lld (LLVM's linker, Debian package lld-19) was not found; looked at ",
      absl::StrJoin(candidates, ", "), ". Set QD_LLD to its path"));
}

absl::StatusOr<std::string> LinkCodeObject(const std::string& lld,
                                           llvm::StringRef object) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  if (!dir.ok())
    return LinkError(dir.status().message());
  const std::string input = dir->File("kernel.o");
  const std::string output = dir->File("kernel.hsaco");
  const std::string log = dir->File("lld.log");
  {
    std::ofstream file(input, std::ios::binary);
    file.write(object.data(), static_cast<std::streamsize>(object.size()));
    if (!file)
      return LinkError(absl::StrCat("cannot write ", input));
  }
  absl::StatusOr<int> exit = Run(
      {lld, "-flavor", "gnu", "-shared", "--no-undefined", input, "-o", output},
      log);
  if (!exit.ok() || *exit != 0) {
    std::optional<std::string> message = ReadFirstFile({log});
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat("linking the AMDGPU code object with ", lld, " failed",
                     exit.ok() ? absl::StrCat(" (exit ", *exit, ")")
                               : absl::StrCat(": ", exit.status().message()),
                     message ? absl::StrCat(": ", *message) : ""));
  }
  std::optional<std::string> hsaco = ReadFirstFile({output});
  if (!hsaco)
    return LinkError(absl::StrCat("ld.lld wrote no ", output));
  return *std::move(hsaco);
}

}  // namespace quadrants::codegen
