#ifndef QUADRANTS_IR_PRINT_FORMAT_H_
#define QUADRANTS_IR_PRINT_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "quadrants/common/source_location.h"
#include "quadrants/ir/types.h"

namespace quadrants::ir {

// What one print(...) in a kernel writes: pieces[0], value 0, pieces[1],
// value 1, ..., pieces[n]. Value k is formatted by specs[k], a printf
// conversion without a length modifier ("%d", "%.3f", "%+8e"), or by the
// default for its type when the spec is empty (see FormatPrintValue).
struct PrintSite {
  std::vector<std::string> pieces;
  std::vector<std::string> specs;
  std::vector<PrimitiveType> types;
  SourceLocation loc;
};

// Whether `spec` is empty or "%" [-+ #0]* digits* ("." digits+)? conversion
// with a conversion that suits `type`: d i for signed integers, u for
// unsigned ones and u1, o x X for any integer, e E f F g G a A for floats.
// Widths and precisions are at most 99.
bool IsValidPrintSpec(absl::string_view spec, PrimitiveType type);

// Checks a whole site: one more piece than values, a valid spec per value.
bool IsValidPrintSite(const PrintSite& site);

// Formats one value that travelled as 64 bits: integers sign- or
// zero-extended, floats as the bits of an f64. Without a spec integers
// print in decimal, u1 as True/False, and floats as printf's "%f" (six
// decimals, as upstream Quadrants prints them).
std::string FormatPrintValue(absl::string_view spec, PrimitiveType type,
                             int64_t bits);

// The text of one record of `site` with `values` (one per type).
std::string FormatPrintRecord(const PrintSite& site, const int64_t* values);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_PRINT_FORMAT_H_
