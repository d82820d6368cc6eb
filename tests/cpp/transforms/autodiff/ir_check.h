// FileCheck-style matching of printed IR, so a golden test states the lines
// that matter, in order, instead of the whole text with every statement
// number.
#ifndef TESTS_CPP_TRANSFORMS_AUTODIFF_IR_CHECK_H_
#define TESTS_CPP_TRANSFORMS_AUTODIFF_IR_CHECK_H_

#include <gtest/gtest.h>

#include "absl/strings/string_view.h"
#include "quadrants/ir/kernel.h"

namespace quadrants::ir_check {

// Matches `text` against `script`, one directive a line (blank lines and
// lines starting with `//` are skipped):
//   CHECK: p       p occurs after the previous match (on the same line after
//                  it, or on a later line);
//   CHECK-NEXT: p  p occurs on the line right after the previous match;
//   CHECK-NOT: p   p does not occur between the previous match and the next
//                  CHECK or CHECK-NEXT match (the end of the text if none).
// A pattern is literal text, matched within one line, where
//   [[NAME]]  stands for a statement name such as $12: its first match binds
//             NAME, and every later use must be the same statement (a
//             CHECK-NOT neither binds nor needs NAME bound);
//   {{re}}    is an ECMAScript regular expression without capture groups.
// On failure the message names the directive and shows the numbered text;
// with IR_CHECK_DUMP set in the environment every checked text is printed.
::testing::AssertionResult CheckIr(absl::string_view text,
                                   absl::string_view script);

// CheckIr on the printed kernel.
::testing::AssertionResult CheckKernel(const ir::Kernel& kernel,
                                       absl::string_view script);

}  // namespace quadrants::ir_check

#endif  // TESTS_CPP_TRANSFORMS_AUTODIFF_IR_CHECK_H_
