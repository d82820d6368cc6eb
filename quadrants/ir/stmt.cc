#include "quadrants/ir/stmt.h"

#include <algorithm>
#include <cassert>

namespace quadrants::ir {
namespace {

constexpr absl::string_view kKindNames[] = {
    "const",
    "arg_load",
    "ndarray_ptr",
    "ndarray_shape",
    "field_ptr",
    "snode_op",
    "global_load",
    "global_store",
    "alloca",
    "local_load",
    "local_store",
    "unary",
    "binary",
    "select",
    "atomic",
    "range_for",
    "struct_for",
    "loop_index",
    "while",
    "break",
    "continue",
    "if",
    "assert",
    "offloaded",
    "adstack_alloca",
    "adstack_push",
    "adstack_pop",
    "adstack_load_top",
    "adstack_load_top_adj",
    "adstack_acc_adjoint",
    "adstack_capacity",
    "adstack_row",
    "print",
    "random",
    "thread_index",
    "shared_array",
    "shared_ptr",
    "simt",
    "func_arg",
    "call",
    "return",
};

#define QD_COUNT_KIND(name) +1
static_assert(sizeof(kKindNames) / sizeof(kKindNames[0]) ==
                  0 QD_FOR_EACH_STMT_KIND(QD_COUNT_KIND),
              "every statement kind needs a name");
#undef QD_COUNT_KIND

}  // namespace

absl::string_view StmtKindName(StmtKind kind) {
  return kKindNames[static_cast<size_t>(kind)];
}

Stmt* Stmt::enclosing() const {
  return parent_ == nullptr ? nullptr : parent_->owner();
}

void Stmt::ReplaceOperand(Stmt* from, Stmt* to) {
  std::replace(operands_.begin(), operands_.end(), from, to);
}

bool Stmt::IsInside(const Stmt* container) const {
  for (const Stmt* s = enclosing(); s != nullptr; s = s->enclosing()) {
    if (s == container)
      return true;
  }
  return false;
}

size_t Block::IndexOf(const Stmt* stmt) const {
  for (size_t i = 0; i < statements_.size(); ++i) {
    if (statements_[i].get() == stmt)
      return i;
  }
  return statements_.size();
}

Stmt* Block::Insert(size_t position, std::unique_ptr<Stmt> stmt) {
  assert(position <= statements_.size());
  stmt->parent_ = this;
  Stmt* raw = stmt.get();
  statements_.insert(statements_.begin() + position, std::move(stmt));
  return raw;
}

std::unique_ptr<Stmt> Block::Extract(const Stmt* stmt) {
  size_t index = IndexOf(stmt);
  assert(index < statements_.size());
  std::unique_ptr<Stmt> taken = std::move(statements_[index]);
  statements_.erase(statements_.begin() + index);
  taken->parent_ = nullptr;
  return taken;
}

std::vector<std::unique_ptr<Stmt>> Block::TakeAll() {
  std::vector<std::unique_ptr<Stmt>> taken = std::move(statements_);
  statements_.clear();
  for (auto& stmt : taken)
    stmt->parent_ = nullptr;
  return taken;
}

}  // namespace quadrants::ir
