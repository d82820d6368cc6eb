#include "quadrants/ir/statements.h"

#include <cassert>

namespace quadrants::ir {

void OffloadedTaskStmt::SetBounds(Stmt* begin, Stmt* end) {
  assert(task_kind_ == TaskKind::kRangeFor);
  if (num_operands() == 0) {
    AddOperand(begin);
    AddOperand(end);
  } else {
    set_operand(0, begin);
    set_operand(1, end);
  }
}

bool OffloadedTaskStmt::has_const_bounds() const {
  return Isa<ConstStmt>(begin()) && Isa<ConstStmt>(end());
}

}  // namespace quadrants::ir
