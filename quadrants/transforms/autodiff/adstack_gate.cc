#include "quadrants/transforms/autodiff/adstack_gate.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/common/logging.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::AdStackGate;
using ir::AdStackGateIndex;
using ir::BinaryOpKind;
using ir::Stmt;

bool IsStackUse(const Stmt* s) {
  switch (s->kind()) {
    case ir::StmtKind::kAdStackPush:
    case ir::StmtKind::kAdStackPop:
    case ir::StmtKind::kAdStackLoadTop:
    case ir::StmtKind::kAdStackLoadTopAdj:
    case ir::StmtKind::kAdStackAccAdjoint:
    case ir::StmtKind::kAdStackCapacity:
      return true;
    default:
      return false;
  }
}

// The statement of `body` that holds `s`.
const Stmt* InBlock(const Stmt* s, const ir::Block* body) {
  while (s->parent() != body)
    s = s->parent()->owner();
  return s;
}

// The `if` over every stack use of `body`, or why there is none.
std::string CommonGate(const ir::Block& body, const Stmt** cond) {
  std::string obstacle;
  *cond = nullptr;
  ir::WalkBlock(body, [&](const Stmt* s) {
    if (!obstacle.empty() || !IsStackUse(s))
      return;
    const auto* top = ir::DynCast<ir::IfStmt>(InBlock(s, &body));
    if (top == nullptr) {
      obstacle = absl::StrCat("an adstack is used outside an `if` at ",
                              s->loc().ToString());
      return;
    }
    const Stmt* in_if = s;
    while (in_if->parent()->owner() != top)
      in_if = in_if->parent()->owner();
    if (in_if->parent() != top->true_block()) {
      obstacle = absl::StrCat("an adstack is used in an else branch at ",
                              s->loc().ToString());
      return;
    }
    if (*cond != nullptr && *cond != top->cond()) {
      obstacle = absl::StrCat("adstacks are used under different conditions "
                              "(",
                              top->loc().ToString(), ")");
      return;
    }
    *cond = top->cond();
  });
  if (obstacle.empty() && *cond == nullptr)
    obstacle = "no adstack is used";
  if (obstacle.empty() && (*cond)->parent() != &body)
    obstacle = "the condition is computed inside a branch";
  return obstacle;
}

BinaryOpKind Mirrored(BinaryOpKind op) {
  switch (op) {
    case BinaryOpKind::kLt:
      return BinaryOpKind::kGt;
    case BinaryOpKind::kGt:
      return BinaryOpKind::kLt;
    case BinaryOpKind::kLe:
      return BinaryOpKind::kGe;
    case BinaryOpKind::kGe:
      return BinaryOpKind::kLe;
    default:
      return op;
  }
}

// `index` as a digit of a loop axis of `task`, a constant or an argument.
bool DescribeIndex(const Stmt* index, const ir::OffloadedTaskStmt& task,
                   AdStackGateIndex* out) {
  if (const auto* c = ir::DynCast<ir::ConstStmt>(index)) {
    out->kind = AdStackGateIndex::Kind::kConst;
    out->value = c->value().as_int();
    return !c->value().is_float();
  }
  if (const auto* a = ir::DynCast<ir::ArgLoadStmt>(index)) {
    out->kind = AdStackGateIndex::Kind::kArg;
    out->value = a->arg();
    return ir::IsInteger(a->type().element());
  }
  if (const auto* l = ir::DynCast<ir::LoopIndexStmt>(index)) {
    out->kind = AdStackGateIndex::Kind::kLoopDigit;
    out->axis = l->axis();
    return l->loop() == &task;
  }
  const auto* b = ir::DynCast<ir::BinaryOpStmt>(index);
  const auto* k = b == nullptr ? nullptr : ir::DynCast<ir::ConstStmt>(b->rhs());
  if (k == nullptr || k->value().is_float() || k->value().as_int() <= 0 ||
      !DescribeIndex(b->lhs(), task, out) ||
      out->kind != AdStackGateIndex::Kind::kLoopDigit || out->modulus != 0) {
    return false;
  }
  if (b->op() == BinaryOpKind::kFloorDiv) {
    out->divisor *= k->value().as_int();
    return true;
  }
  if (b->op() == BinaryOpKind::kMod) {
    out->modulus = k->value().as_int();
    return true;
  }
  return false;
}

// Whether the loop digits of `indices` name each of `axes` loop axes
// whole, in mixed radix (i // d0 % m0 with d0 = 1, then d1 = d0 * m0, ...,
// the last without modulus), so distinct iterations read distinct elements.
bool Injective(const std::vector<AdStackGateIndex>& indices, int axes) {
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> digits;
  for (const AdStackGateIndex& k : indices) {
    if (k.kind == AdStackGateIndex::Kind::kLoopDigit)
      digits[k.axis].push_back({k.divisor, k.modulus});
  }
  if (static_cast<int>(digits.size()) != axes)
    return false;
  for (auto& [axis, list] : digits) {
    if (axis < 0 || axis >= axes)
      return false;
    std::sort(list.begin(), list.end());
    int64_t next = 1;
    for (size_t d = 0; d < list.size(); ++d) {
      if (list[d].first != next)
        return false;
      const bool last = d + 1 == list.size();
      if ((list[d].second == 0) != last)
        return false;
      next *= list[d].second;
    }
  }
  return true;
}

int TaskAxes(const ir::OffloadedTaskStmt& task, const ir::SNodeTree& snodes) {
  if (task.task_kind() != ir::TaskKind::kStructFor)
    return 1;
  std::vector<int> axes;
  for (const auto& [axis, extent] : snodes.CellAxes(task.snode_id())) {
    if (std::find(axes.begin(), axes.end(), axis) == axes.end())
      axes.push_back(axis);
  }
  return static_cast<int>(axes.size());
}

// Whether the kernel stores to or atomically updates the gate's array.
bool Writes(const ir::Kernel& kernel, const AdStackGate& gate) {
  bool writes = false;
  ir::WalkKernel(kernel, [&](const Stmt* s) {
    const Stmt* ptr = nullptr;
    if (const auto* store = ir::DynCast<ir::GlobalStoreStmt>(s))
      ptr = store->ptr();
    else if (const auto* atomic = ir::DynCast<ir::AtomicOpStmt>(s))
      ptr = atomic->ptr();
    if (const auto* f = ir::DynCast<ir::FieldPtrStmt>(ptr))
      writes |= gate.is_field && f->snode_id() == gate.id;
    if (const auto* n = ir::DynCast<ir::NdarrayPtrStmt>(ptr))
      writes |= !gate.is_field && n->arg() == gate.id;
  });
  return writes;
}

std::string DescribeGate(const ir::Kernel& kernel, const ir::SNodeTree& snodes,
                         const ir::OffloadedTaskStmt& task, const Stmt* cond,
                         AdStackGate* gate) {
  const auto* cmp = ir::DynCast<ir::BinaryOpStmt>(cond);
  if (cmp == nullptr || !ir::IsComparison(cmp->op()))
    return "the condition is not a comparison";
  gate->op = cmp->op();
  const Stmt* load = cmp->lhs();
  const Stmt* constant = cmp->rhs();
  if (ir::Isa<ir::ConstStmt>(load)) {
    std::swap(load, constant);
    gate->op = Mirrored(gate->op);
  }
  const auto* value = ir::DynCast<ir::ConstStmt>(constant);
  const auto* read = ir::DynCast<ir::GlobalLoadStmt>(load);
  if (value == nullptr || read == nullptr) {
    return "the condition does not compare a field or ndarray element with "
           "a constant";
  }
  const Stmt* ptr = read->ptr();
  if (const auto* f = ir::DynCast<ir::FieldPtrStmt>(ptr)) {
    gate->is_field = true;
    gate->id = f->snode_id();
    gate->label = f->label();
  } else if (const auto* n = ir::DynCast<ir::NdarrayPtrStmt>(ptr)) {
    gate->id = n->arg();
    gate->label = n->label();
  } else {
    return "the condition reads neither a field nor an ndarray";
  }
  gate->dtype = ptr->type().element();
  gate->threshold = value->value().as_float();
  gate->int_threshold = value->value().as_int();
  if (ir::IsFloat(gate->dtype) != value->value().is_float())
    return "the condition compares values of different types";
  for (const Stmt* index : ptr->operands()) {
    AdStackGateIndex k;
    if (!DescribeIndex(index, task, &k)) {
      return absl::StrCat("index ", gate->indices.size(), " of '", gate->label,
                          "' is not a loop index digit, a constant or an "
                          "argument");
    }
    gate->indices.push_back(k);
  }
  if (!Injective(gate->indices, TaskAxes(task, snodes))) {
    return absl::StrCat("the indices of '", gate->label,
                        "' may map several iterations to one element");
  }
  if (Writes(kernel, *gate))
    return absl::StrCat("the kernel writes '", gate->label, "'");
  return "";
}

bool HasStacks(const ir::OffloadedTaskStmt& task) {
  bool any = false;
  ir::WalkBlock(*task.body(), [&](const Stmt* s) {
    any |= ir::Isa<ir::AdStackAllocaStmt>(s);
  });
  return any;
}

// Puts the row right after the condition and every stack after the row.
void InsertRow(ir::OffloadedTaskStmt& task, Stmt* passes, AdStackGate gate) {
  ir::Block& body = *task.body();
  std::vector<std::unique_ptr<Stmt>> stacks;
  for (size_t k = 0; k < body.size();) {
    if (ir::Isa<ir::AdStackAllocaStmt>(body.at(k)))
      stacks.push_back(body.Extract(body.at(k)));
    else
      ++k;
  }
  size_t at = body.IndexOf(passes) + 1;
  auto row = std::make_unique<ir::AdStackRowStmt>(passes, std::move(gate));
  row->set_loc(passes->loc());
  body.Insert(at++, std::move(row));
  for (auto& stack : stacks)
    body.Insert(at++, std::move(stack));
}

}  // namespace

std::string FindAdStackGate(const ir::Kernel& kernel,
                            const ir::SNodeTree& snodes,
                            const ir::OffloadedTaskStmt& task, Stmt** passes,
                            AdStackGate* gate) {
  const Stmt* cond = nullptr;
  std::string obstacle = CommonGate(*task.body(), &cond);
  if (obstacle.empty())
    obstacle = DescribeGate(kernel, snodes, task, cond, gate);
  *passes = obstacle.empty() ? const_cast<Stmt*>(cond) : nullptr;
  return obstacle;
}

void GateAdStackHeaps(ir::Kernel& kernel, const ir::SNodeTree& snodes) {
  const ir::Block& root = *kernel.body();
  for (size_t t = 0; t < root.size(); ++t) {
    auto* task = ir::DynCast<ir::OffloadedTaskStmt>(root.at(t));
    if (task == nullptr || !HasStacks(*task))
      continue;
    const std::string what = absl::StrCat("kernel '", kernel.name(), "' task ",
                                          t, " (", task->loc().ToString(), ")");
    Stmt* passes = nullptr;
    AdStackGate gate;
    const std::string obstacle =
        FindAdStackGate(kernel, snodes, *task, &passes, &gate);
    if (!obstacle.empty()) {
      QD_LOG(DEBUG) << what << ": adstack heap sized for every thread, not "
                    << "gated: " << obstacle;
      continue;
    }
    QD_LOG(DEBUG) << what << ": adstack heap gated by " << gate.ToString();
    InsertRow(*task, passes, std::move(gate));
  }
}

}  // namespace quadrants::transforms::autodiff
