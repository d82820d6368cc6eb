#include "quadrants/common/binary_identity.h"

#include <dlfcn.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/common/stable_hash.h"

namespace quadrants {
namespace {

std::optional<std::string> ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::stringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    return std::nullopt;
  return contents.str();
}

}  // namespace

std::string BinaryIdentity(absl::Span<const void* const> anchors) {
  std::vector<std::string> files;
  std::string out;
  for (const void* anchor : anchors) {
    Dl_info info;
    if (dladdr(anchor, &info) == 0 || info.dli_fname == nullptr)
      return "";
    if (std::find(files.begin(), files.end(), info.dli_fname) != files.end())
      continue;
    files.push_back(info.dli_fname);
    std::optional<std::string> contents = ReadFile(info.dli_fname);
    if (!contents || contents->empty())
      return "";
    absl::StrAppend(&out, out.empty() ? "" : " ", info.dli_fname, ":",
                    StableHash64(*contents));
  }
  return out;
}

}  // namespace quadrants
