#include "quadrants/transforms/autodiff/global_access_rule.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::Stmt;

// A value an index depends on: a loop's index along one axis (`def` is the
// loop, `axis` >= 0) or any other statement taken as an unknown (`axis` -1).
using Symbol = std::pair<const Stmt*, int>;

// sum(coefficient * symbol) + constant.
struct Affine {
  absl::flat_hash_map<Symbol, int64_t> terms;
  int64_t constant = 0;

  void Add(const Affine& other, int64_t scale) {
    constant += scale * other.constant;
    for (const auto& [symbol, coefficient] : other.terms) {
      int64_t& c = terms[symbol];
      c += scale * coefficient;
      if (c == 0)
        terms.erase(symbol);
    }
  }
  int64_t Coefficient(const Symbol& s) const {
    auto it = terms.find(s);
    return it == terms.end() ? 0 : it->second;
  }
};

Affine Unknown(const Stmt* s) {
  Affine a;
  a.terms[{s, -1}] = 1;
  return a;
}

Affine ToAffine(const Stmt* s) {
  if (const auto* c = ir::DynCast<ir::ConstStmt>(s)) {
    if (!c->value().is_float()) {
      Affine a;
      a.constant = c->value().as_int();
      return a;
    }
  }
  if (const auto* arg = ir::DynCast<ir::ArgLoadStmt>(s)) {
    Affine a;  // one symbol per argument, however often it is loaded
    a.terms[{nullptr, -2 - arg->arg()}] = 1;
    return a;
  }
  if (const auto* index = ir::DynCast<ir::LoopIndexStmt>(s)) {
    Affine a;
    a.terms[{index->loop(), index->axis()}] = 1;
    return a;
  }
  if (const auto* unary = ir::DynCast<ir::UnaryOpStmt>(s)) {
    // Only casts that keep every value look through: a narrowing or
    // sign-changing cast may wrap two different indices onto one element.
    const ir::PrimitiveType to = s->type().element();
    const ir::PrimitiveType from = unary->input()->type().element();
    const bool int_cast = unary->is_cast() && s->type().is_integer_scalar() &&
                          unary->input()->type().is_integer_scalar() &&
                          ir::IsSigned(to) == ir::IsSigned(from) &&
                          ir::BitWidth(to) >= ir::BitWidth(from);
    if (int_cast)
      return ToAffine(unary->input());
    if (unary->op() == ir::UnaryOpKind::kNeg) {
      Affine a;
      a.Add(ToAffine(unary->input()), -1);
      return a;
    }
  }
  if (const auto* binary = ir::DynCast<ir::BinaryOpStmt>(s)) {
    Affine lhs = ToAffine(binary->lhs());
    Affine rhs = ToAffine(binary->rhs());
    switch (binary->op()) {
      case ir::BinaryOpKind::kAdd:
        lhs.Add(rhs, 1);
        return lhs;
      case ir::BinaryOpKind::kSub:
        lhs.Add(rhs, -1);
        return lhs;
      case ir::BinaryOpKind::kMul:
        if (rhs.terms.empty()) {
          Affine a;
          a.Add(lhs, rhs.constant);
          return a;
        }
        if (lhs.terms.empty()) {
          Affine a;
          a.Add(rhs, lhs.constant);
          return a;
        }
        break;
      default:
        break;
    }
  }
  return Unknown(s);
}

// The statement whose single execution fixes a symbol's value: the loop for
// a loop index, else the container around the statement (null: the kernel,
// as for scalar arguments).
const Stmt* Scope(const Symbol& s) {
  if (s.first == nullptr)
    return nullptr;
  return s.second >= 0 ? s.first : s.first->enclosing();
}

// Whether `inner` (a statement) runs inside `outer` (null: the kernel).
bool Encloses(const Stmt* outer, const Stmt* inner) {
  return outer == nullptr || inner == outer || inner->IsInside(outer);
}

// Whether container `scope` is `inner` or around it (null: the kernel).
bool ScopeEncloses(const Stmt* scope, const Stmt* inner) {
  if (scope == nullptr)
    return true;
  return inner != nullptr && Encloses(scope, inner);
}

struct Access {
  const Stmt* stmt;  // the load, store or atomic
  const Stmt* ptr;
  int64_t target;  // place SNode id, or -1 - ndarray argument
  size_t order;    // position in program order
};

// Null for addresses outside global memory (block-shared arrays), which the
// rule does not govern.
std::optional<int64_t> Target(const Stmt* ptr) {
  if (const auto* field = ir::DynCast<ir::FieldPtrStmt>(ptr))
    return field->snode_id();
  if (const auto* array = ir::DynCast<ir::NdarrayPtrStmt>(ptr))
    return -1 - array->arg();
  return std::nullopt;
}

// Containers around `s`, innermost first.
std::vector<const Stmt*> Containers(const Stmt* s) {
  std::vector<const Stmt*> out;
  for (const Stmt* c = s->enclosing(); c != nullptr; c = c->enclosing())
    out.push_back(c);
  return out;
}

// The values [lo, hi] an index may take, when it depends only on loop
// indices with constant bounds.
std::optional<std::pair<int64_t, int64_t>> Range(const Affine& a) {
  int64_t lo = a.constant, hi = a.constant;
  for (const auto& [symbol, coefficient] : a.terms) {
    if (symbol.second < 0 || symbol.first == nullptr)
      return std::nullopt;
    const Stmt *begin = nullptr, *end = nullptr;
    if (const auto* loop = ir::DynCast<ir::RangeForStmt>(symbol.first)) {
      begin = loop->begin();
      end = loop->end();
    } else if (const auto* task =
                   ir::DynCast<ir::OffloadedTaskStmt>(symbol.first)) {
      if (task->task_kind() != ir::TaskKind::kRangeFor)
        return std::nullopt;
      begin = task->begin();
      end = task->end();
    }
    const auto* b = ir::DynCast<ir::ConstStmt>(begin);
    const auto* e = ir::DynCast<ir::ConstStmt>(end);
    if (b == nullptr || e == nullptr)
      return std::nullopt;
    const int64_t first = b->value().as_int();
    const int64_t last = e->value().as_int() - 1;
    if (last < first)
      return std::nullopt;
    lo += std::min(coefficient * first, coefficient * last);
    hi += std::max(coefficient * first, coefficient * last);
  }
  return std::make_pair(lo, hi);
}

// Whether constant loop bounds keep the values of `a` and `b` apart.
bool RangesDisjoint(const Affine& a, const Affine& b) {
  auto ra = Range(a), rb = Range(b);
  return ra && rb && (ra->second < rb->first || rb->second < ra->first);
}

// Whether index dimension `read` and `write` can never be equal when the
// write happens `advanced` == null: in the same iteration of every loop
// around both (within `common`, the innermost container around both), or
// `advanced` = L: in a later iteration of loop L than the read.
bool DimensionDiffers(const Affine& read, const Affine& write,
                      const Stmt* common, const Stmt* advanced) {
  if (RangesDisjoint(read, write))
    return true;
  Affine diff = write;
  diff.Add(read, -1);
  if (!diff.terms.empty())
    return false;  // the two depend differently on some value
  for (const Affine* a : {&read, &write}) {
    for (const auto& [symbol, coefficient] : a->terms) {
      (void)coefficient;
      const Stmt* scope = Scope(symbol);
      const bool fixed = advanced == nullptr
                             ? ScopeEncloses(scope, common)
                             : scope != advanced && Encloses(scope, advanced);
      const bool advancing =
          advanced != nullptr && symbol == Symbol{advanced, 0};
      if (!fixed && !advancing)
        return false;  // may take another value at the write
    }
  }
  if (advanced == nullptr)
    return diff.constant != 0;
  if (!ir::Isa<ir::RangeForStmt>(advanced))
    return false;
  // write - read = c * d + k for a trip distance d >= 1, with c the index
  // coefficient on both sides (equal, since diff has no such term).
  const int64_t step = read.Coefficient({advanced, 0});
  const int64_t k = diff.constant;
  if (step == 0)
    return k != 0;
  return (-k) % step != 0 || (-k) / step < 1;
}

class RuleChecker {
 public:
  RuleChecker(const ir::Kernel& kernel, const ir::SNodeTree& snodes)
      : kernel_(kernel), snodes_(snodes) {}

  absl::Status Check() {
    size_t order = 0;
    std::vector<Access> reads, writes;
    ir::WalkKernel(kernel_, [&](const Stmt* s) {
      ++order;
      for (const Stmt* operand : s->operands())
        users_[operand].push_back(s);
      const bool read = ir::Isa<ir::GlobalLoadStmt>(s);
      const bool write =
          ir::Isa<ir::GlobalStoreStmt>(s) || ir::Isa<ir::AtomicOpStmt>(s);
      if (!read && !write)
        return;
      const std::optional<int64_t> target = Target(s->operand(0));
      if (target.has_value())
        (read ? reads : writes).push_back({s, s->operand(0), *target, order});
    });
    for (const Access& read : reads) {
      for (const Access& write : writes) {
        if (read.target != write.target)
          continue;
        if (const Stmt* task = CrossIterationTask(read, write))
          return CrossIterationViolation(read, write, *task);
        if (MayOverwrite(read, write) && ValueNeeded(read.stmt))
          return Violation(read, write);
      }
    }
    return absl::OkStatus();
  }

 private:
  // Whether `write` may store into the element `read` loaded, after it.
  bool MayOverwrite(const Access& read, const Access& write) {
    const auto outer_r = Containers(read.stmt);
    const auto outer_w = Containers(write.stmt);
    const Stmt* common = nullptr;
    std::vector<const Stmt*> serial_loops;  // around both, outermost last
    for (const Stmt* c : outer_r) {
      if (!Encloses(c, write.stmt))
        continue;
      if (common == nullptr)
        common = c;
      if (ir::IsBreakableLoop(c))
        serial_loops.push_back(c);
    }
    if (write.order > read.order && !Differs(read, write, common, nullptr))
      return true;
    for (const Stmt* loop : serial_loops) {
      if (!Differs(read, write, common, loop))
        return true;
    }
    return false;
  }

  // Whether the gradient kernel needs the value `load` read. It does not
  // when the value only flows, through sums, differences, negations, float
  // casts and products with constants, into stored or atomically added
  // values, or is picked by a select: those adjoints are the same whatever
  // the value was (as in the in-place update out[i] = out[i] + x).
  bool ValueNeeded(const Stmt* load) const {
    std::vector<const Stmt*> pending = {load};
    absl::flat_hash_map<const Stmt*, bool> seen;
    while (!pending.empty()) {
      const Stmt* value = pending.back();
      pending.pop_back();
      if (seen[value])
        continue;
      seen[value] = true;
      auto it = users_.find(value);
      if (it == users_.end())
        continue;
      for (const Stmt* user : it->second) {
        if (!PassesLinearly(value, user, pending))
          return true;
      }
    }
    return false;
  }

  // Whether `user` consumes `value` linearly; a derived value it produces
  // joins `pending`.
  static bool PassesLinearly(const Stmt* value, const Stmt* user,
                             std::vector<const Stmt*>& pending) {
    if (ir::Isa<ir::GlobalStoreStmt>(user))
      return user->operand(0) != value;
    if (const auto* atomic = ir::DynCast<ir::AtomicOpStmt>(user)) {
      return user->operand(0) != value &&
             (atomic->op() == ir::AtomicOpKind::kAdd ||
              atomic->op() == ir::AtomicOpKind::kSub);
    }
    if (const auto* unary = ir::DynCast<ir::UnaryOpStmt>(user)) {
      const bool float_cast = unary->is_cast() && user->type().is_float_scalar() &&
                              value->type().is_float_scalar();
      if (unary->op() != ir::UnaryOpKind::kNeg && !float_cast)
        return false;
      pending.push_back(user);
      return true;
    }
    if (const auto* select = ir::DynCast<ir::TernaryOpStmt>(user)) {
      // A select's adjoint needs only its condition.
      if (select->cond() == value)
        return false;
      pending.push_back(user);
      return true;
    }
    if (const auto* binary = ir::DynCast<ir::BinaryOpStmt>(user)) {
      const Stmt* other =
          binary->lhs() == value ? binary->rhs() : binary->lhs();
      switch (binary->op()) {
        case ir::BinaryOpKind::kAdd:
        case ir::BinaryOpKind::kSub:
          break;
        case ir::BinaryOpKind::kMul:
          if (!ir::Isa<ir::ConstStmt>(other))
            return false;
          break;
        case ir::BinaryOpKind::kDiv:
          if (binary->lhs() != value || !ir::Isa<ir::ConstStmt>(other))
            return false;
          break;
        default:
          return false;
      }
      pending.push_back(user);
      return true;
    }
    return false;
  }

  // The parallel task in which one iteration writes the element another
  // iteration reads (for example out[i] and out[i - 1]), when every index
  // dimension shows it; null otherwise. The forward kernel races there and
  // the gradient moves adjoints between iterations in no fixed order.
  const Stmt* CrossIterationTask(const Access& read,
                                 const Access& write) const {
    const Stmt* task = nullptr;
    for (const Stmt* c = read.stmt->enclosing(); c != nullptr;
         c = c->enclosing()) {
      task = c;
    }
    const auto* offloaded = ir::DynCast<ir::OffloadedTaskStmt>(task);
    if (offloaded == nullptr ||
        offloaded->task_kind() == ir::TaskKind::kSerial ||
        !Encloses(task, write.stmt))
      return nullptr;
    const size_t n = read.ptr->num_operands();
    if (n != write.ptr->num_operands())
      return nullptr;
    absl::flat_hash_map<int, int64_t> shift;  // axis -> write - read iteration
    bool moves = false;
    for (size_t d = 0; d < n; ++d) {
      const Affine r = ToAffine(read.ptr->operand(d));
      const Affine w = ToAffine(write.ptr->operand(d));
      if (RangesDisjoint(r, w))
        return nullptr;
      Affine diff = w;
      diff.Add(r, -1);
      if (!diff.terms.empty())
        return nullptr;
      std::optional<Symbol> axis;
      for (const auto& [symbol, coefficient] : r.terms) {
        (void)coefficient;
        if (symbol.first == task && symbol.second >= 0) {
          if (axis)
            return nullptr;  // two axes in one dimension
          axis = symbol;
        } else if (!ScopeEncloses(Scope(symbol), task) ||
                   Scope(symbol) == task) {
          return nullptr;  // changes within an iteration
        }
      }
      if (!axis) {
        if (diff.constant != 0)
          return nullptr;
        continue;
      }
      const int64_t c = r.Coefficient(*axis);
      if (diff.constant % c != 0)
        return nullptr;
      // w(i') = r(i) means c * i' + k + diff = c * i + k.
      const int64_t delta = -diff.constant / c;
      auto [it, fresh] = shift.emplace(axis->second, delta);
      if (!fresh && it->second != delta)
        return nullptr;
      moves = moves || delta != 0;
    }
    return moves ? task : nullptr;
  }

  bool Differs(const Access& read, const Access& write, const Stmt* common,
               const Stmt* advanced) {
    const size_t n = read.ptr->num_operands();
    for (size_t d = 0; d < n && d < write.ptr->num_operands(); ++d) {
      if (DimensionDiffers(ToAffine(read.ptr->operand(d)),
                           ToAffine(write.ptr->operand(d)), common, advanced))
        return true;
    }
    return false;
  }

  std::string Describe(const Access& access) const {
    std::string label;
    std::string kind;
    if (const auto* f = ir::DynCast<ir::FieldPtrStmt>(access.ptr)) {
      label =
          f->label().empty() ? snodes_.node(f->snode_id()).name : f->label();
      kind = "field";
    } else {
      const auto* a = static_cast<const ir::NdarrayPtrStmt*>(access.ptr);
      label = a->label().empty() ? kernel_.params()[a->arg()].name : a->label();
      kind = "ndarray";
    }
    return absl::StrCat(kind, " '", label, "'");
  }

  absl::Status Violation(const Access& read, const Access& write) const {
    return MakeError(
        ErrorKind::kGlobalDataAccess, write.stmt->loc(),
        absl::StrCat(
            "in kernel '", kernel_.name(), "': ", Describe(read),
            " is read at ", read.stmt->loc().ToString(),
            " and later overwritten at ", write.stmt->loc().ToString(),
            " (the same element, or one that cannot be told apart from it). "
            "The gradient kernel reads the value again and would see the new "
            "one, so this kernel cannot be differentiated. Write the new "
            "value to another element (for example index the state by time "
            "step: x[t + 1, i] = f(x[t, i])) or to another field, or split "
            "the kernel"));
  }

  absl::Status CrossIterationViolation(const Access& read, const Access& write,
                                       const Stmt& task) const {
    return MakeError(
        ErrorKind::kGlobalDataAccess, read.stmt->loc(),
        absl::StrCat(
            "in kernel '", kernel_.name(),
            "': Cross-iteration read-after-write through ", Describe(read),
            ": one iteration of the parallel loop at ", task.loc().ToString(),
            " writes at ", write.stmt->loc().ToString(),
            " the element another iteration reads at ",
            read.stmt->loc().ToString(),
            ". The iterations run in parallel, so the value read depends on "
            "their order and the gradient cannot follow it. Make the loop "
            "serial (qd.loop_config(serialize=True)), put it inside an outer "
            "loop, or read the previous values from another field"));
  }

  const ir::Kernel& kernel_;
  const ir::SNodeTree& snodes_;
  absl::flat_hash_map<const Stmt*, std::vector<const Stmt*>> users_;
};

}  // namespace

absl::Status CheckGlobalDataAccessRule(const ir::Kernel& kernel,
                                       const ir::SNodeTree& snodes) {
  return RuleChecker(kernel, snodes).Check();
}

}  // namespace quadrants::transforms::autodiff
