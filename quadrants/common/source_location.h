#ifndef QUADRANTS_COMMON_SOURCE_LOCATION_H_
#define QUADRANTS_COMMON_SOURCE_LOCATION_H_

#include <string>

#include "absl/strings/str_cat.h"

namespace quadrants {

// Where a piece of user code came from: the Python file and line that every
// IR statement carries so any later error can point back at it.
struct SourceLocation {
  std::string file;
  int line = 0;

  bool known() const { return !file.empty(); }
  std::string ToString() const {
    return known() ? absl::StrCat(file, ":", line) : "<unknown location>";
  }
};

}  // namespace quadrants

#endif  // QUADRANTS_COMMON_SOURCE_LOCATION_H_
