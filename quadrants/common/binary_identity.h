#ifndef QUADRANTS_COMMON_BINARY_IDENTITY_H_
#define QUADRANTS_COMMON_BINARY_IDENTITY_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace quadrants {

// The paths and content hashes of the loaded files (shared objects or the
// executable) holding the code at `anchors`, each file once: the GNU
// build-id the linker wrote where there is one (the extension modules are
// linked with --build-id), else a hash of the file; an empty string when a
// file cannot be found or read. A rebuilt compiler may emit
// different code for the same input, so what it compiled is only reusable
// by the same files.
std::string BinaryIdentity(absl::Span<const void* const> anchors);

// "<name> <BinaryIdentity of the functions>", or an empty string when the
// files cannot be read: what keys a compiler's offline cache entries.
template <typename... Functions>
std::string CompilerIdentity(absl::string_view name,
                             Functions*... functions) {
  const void* anchors[] = {reinterpret_cast<const void*>(functions)...};
  const std::string files = BinaryIdentity(anchors);
  return files.empty() ? "" : absl::StrCat(name, " ", files);
}

}  // namespace quadrants

#endif  // QUADRANTS_COMMON_BINARY_IDENTITY_H_
