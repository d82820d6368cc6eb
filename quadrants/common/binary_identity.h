#ifndef QUADRANTS_COMMON_BINARY_IDENTITY_H_
#define QUADRANTS_COMMON_BINARY_IDENTITY_H_

#include <string>

#include "absl/types/span.h"

namespace quadrants {

// The paths and content hashes of the loaded files (shared objects or the
// executable) holding the code at `anchors`, each file once; an empty
// string when a file cannot be found or read. A rebuilt compiler may emit
// different code for the same input, so what it compiled is only reusable
// by the same files.
std::string BinaryIdentity(absl::Span<const void* const> anchors);

}  // namespace quadrants

#endif  // QUADRANTS_COMMON_BINARY_IDENTITY_H_
