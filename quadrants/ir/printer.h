#ifndef QUADRANTS_IR_PRINTER_H_
#define QUADRANTS_IR_PRINTER_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/stmt.h"

namespace quadrants::ir {

struct PrintOptions {
  // Appends "  @file:line" to each statement.
  bool locations = false;
};

// Numbers statements $0, $1, ... in program order. Numbers depend only on
// structure, so a kernel and its clone print identically.
class StmtNumbering {
 public:
  explicit StmtNumbering(const Kernel& kernel);
  // "$N", or "$?" for a statement outside the kernel (malformed IR).
  std::string Name(const Stmt* stmt) const;

 private:
  absl::flat_hash_map<const Stmt*, int> numbers_;
};

// The stable textual form used by QD_DUMP_IR and golden tests.
std::string PrintKernel(const Kernel& kernel, const PrintOptions& options = {});

// One statement's line (without its blocks), e.g. "$4 : f32 = add $2, $3".
std::string PrintStmt(const Stmt& stmt, const StmtNumbering& numbering);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_PRINTER_H_
