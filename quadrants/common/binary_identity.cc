#include "quadrants/common/binary_identity.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/common/stable_hash.h"

namespace quadrants {
namespace {

// The GNU build-id note of the loaded object based at `base`, in hex: a
// hash of the whole file the linker wrote, read from memory, so large
// binaries cost nothing to identify.
std::optional<std::string> BuildId(const void* base) {
  struct Search {
    const void* base;
    std::optional<std::string> id;
  } search{base, std::nullopt};
  dl_iterate_phdr(
      [](dl_phdr_info* object, size_t, void* data) {
        auto* search = static_cast<Search*>(data);
        if (reinterpret_cast<const void*>(object->dlpi_addr) != search->base)
          return 0;
        for (int i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = object->dlpi_phdr[i];
          if (segment.p_type != PT_NOTE)
            continue;
          const char* note =
              reinterpret_cast<const char*>(object->dlpi_addr + segment.p_vaddr);
          const char* end = note + segment.p_memsz;
          while (note + sizeof(ElfW(Nhdr)) <= end) {
            const auto* header = reinterpret_cast<const ElfW(Nhdr)*>(note);
            const char* name = note + sizeof(ElfW(Nhdr));
            const char* desc = name + ((header->n_namesz + 3) & ~3u);
            if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
                std::string(name, 3) == "GNU" && desc + header->n_descsz <= end) {
              std::string hex;
              for (uint32_t k = 0; k < header->n_descsz; ++k)
                absl::StrAppend(&hex, absl::Hex(static_cast<unsigned char>(desc[k]),
                                                absl::kZeroPad2));
              search->id = hex;
              return 1;
            }
            note = desc + ((header->n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

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
    if (std::optional<std::string> id = BuildId(info.dli_fbase)) {
      absl::StrAppend(&out, out.empty() ? "" : " ", info.dli_fname,
                      ":build-id=", *id);
      continue;
    }
    std::optional<std::string> contents = ReadFile(info.dli_fname);
    if (!contents || contents->empty())
      return "";
    absl::StrAppend(&out, out.empty() ? "" : " ", info.dli_fname, ":",
                    StableHash64(*contents));
  }
  return out;
}

}  // namespace quadrants
