#include "quadrants/adstack/reducer_spec.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace quadrants::adstack {
namespace {

using ir::SizeExpr;
using ir::SizeExprKind;

constexpr int kMaxReadWidth = 32;

class Recognizer {
 public:
  Recognizer(const std::string& kernel, int task, int stack,
             const LeafWidthFn& leaf_width)
      : kernel_(kernel), task_(task), stack_(stack), leaf_width_(leaf_width) {}

  std::vector<ReducerSpec> Run(const SizeExpr& tree) {
    Number(tree);
    Visit(tree);
    return std::move(specs_);
  }

 private:
  // Post-order numbering, first visit wins on shared nodes.
  void Number(const SizeExpr& e) {
    if (numbers_.contains(&e))
      return;
    for (const auto& c : e.children())
      Number(*c);
    numbers_.emplace(&e, static_cast<int>(numbers_.size()));
  }

  // The bound variables `e` reads that it does not bind itself.
  const std::vector<int>& FreeVars(const SizeExpr& e) {
    auto it = free_vars_.find(&e);
    if (it != free_vars_.end())
      return it->second;
    std::vector<int> vars;
    if (e.kind() == SizeExprKind::kBoundVar)
      vars.push_back(e.var_id());
    for (size_t k = 0; k < e.children().size(); ++k) {
      for (int v : FreeVars(*e.children()[k])) {
        // The body of a MaxOverRange binds its variable.
        if (e.kind() == SizeExprKind::kMaxOverRange && k == 2 &&
            v == e.var_id())
          continue;
        if (std::find(vars.begin(), vars.end(), v) == vars.end())
          vars.push_back(v);
      }
    }
    return free_vars_.emplace(&e, std::move(vars)).first->second;
  }

  bool Closed(const SizeExpr& e) { return FreeVars(e).empty(); }

  void Visit(const SizeExpr& e) {
    if (!visited_.insert(&e).second)
      return;
    ReducerSpec spec;
    if (e.kind() == SizeExprKind::kMaxOverRange && Capture(e, &spec)) {
      // Captured nodes in the bounds are dependencies: visiting them first
      // puts them earlier in the list.
      for (int a = 0; a < spec.num_axes; ++a) {
        Visit(*spec.begin[a]);
        Visit(*spec.end[a]);
      }
      for (int a = 0; a < spec.num_axes; ++a) {
        CollectDeps(*spec.begin[a], &spec.deps);
        CollectDeps(*spec.end[a], &spec.deps);
      }
      for (int d : spec.deps)
        spec.depth = std::max(spec.depth, specs_[d].depth + 1);
      captured_.emplace(&e, static_cast<int>(specs_.size()));
      specs_.push_back(std::move(spec));
      return;
    }
    for (const auto& c : e.children())
      Visit(*c);
  }

  void CollectDeps(const SizeExpr& e, std::vector<int>* deps) {
    auto it = captured_.find(&e);
    if (it != captured_.end()) {
      if (std::find(deps->begin(), deps->end(), it->second) == deps->end())
        deps->push_back(it->second);
      return;
    }
    for (const auto& c : e.children())
      CollectDeps(*c, deps);
  }

  bool Capture(const SizeExpr& head, ReducerSpec* spec) {
    std::vector<int> vars;
    const SizeExpr* cur = &head;
    for (;;) {
      const SizeExpr& begin = *cur->children()[0];
      const SizeExpr& end = *cur->children()[1];
      if (!Closed(begin) || !Closed(end))
        return false;
      vars.push_back(cur->var_id());
      spec->begin.push_back(cur->children()[0]);
      spec->end.push_back(cur->children()[1]);
      const SizeExpr* body = cur->children()[2].get();
      // The chain goes on through a nested MaxOverRange over a new variable
      // whose bounds are the same at every point of the outer axes.
      if (body->kind() == SizeExprKind::kMaxOverRange &&
          std::find(vars.begin(), vars.end(), body->var_id()) == vars.end() &&
          Closed(*body->children()[0]) && Closed(*body->children()[1])) {
        cur = body;
        continue;
      }
      axes_ = &vars;
      spec->body = ReducerBody();
      if (Emit(*body, &spec->body) < 0)
        return false;
      break;
    }
    spec->num_axes = static_cast<int>(vars.size());
    spec->node = &head;
    spec->key = ReducerKey{kernel_, task_, stack_, numbers_.at(&head)};
    return true;
  }

  int Axis(int var) const {
    auto it = std::find(axes_->begin(), axes_->end(), var);
    return it == axes_->end() ? -1 : static_cast<int>(it - axes_->begin());
  }

  int Push(ReducerBody* body, BodyInstr instr) {
    body->code.push_back(instr);
    return static_cast<int>(body->code.size()) - 1;
  }

  // Emits `e` into `body`; returns its value's index, or -1 when `e` is
  // outside the grammar.
  int Emit(const SizeExpr& e, ReducerBody* body) {
    switch (e.kind()) {
      case SizeExprKind::kConst:
        return Push(body, {BodyOp::kConst, -1, -1, e.value()});
      case SizeExprKind::kBoundVar: {
        const int axis = Axis(e.var_id());
        if (axis < 0)
          return -1;
        return Push(body, {BodyOp::kAxis, axis, -1, 0});
      }
      case SizeExprKind::kNdarrayShape:
        return Push(body, {BodyOp::kShape, e.arg(), e.axis(), 0});
      case SizeExprKind::kArgValue:
        return Push(body, {BodyOp::kArg, e.arg(), -1, 0});
      case SizeExprKind::kFieldLoad:
      case SizeExprKind::kNdarrayRead: {
        BodyRead read;
        read.is_field = e.kind() == SizeExprKind::kFieldLoad;
        read.id = read.is_field ? e.snode_id() : e.arg();
        const int width = leaf_width_(read.is_field, read.id);
        if (width <= 0 || width > kMaxReadWidth)
          return -1;
        for (const auto& index : e.children()) {
          if (index->kind() == SizeExprKind::kConst) {
            read.indices.push_back({false, index->value()});
          } else if (index->kind() == SizeExprKind::kBoundVar &&
                     Axis(index->var_id()) >= 0) {
            read.indices.push_back({true, Axis(index->var_id())});
          } else {
            return -1;
          }
        }
        body->reads.push_back(std::move(read));
        return Push(body, {BodyOp::kRead,
                           static_cast<int>(body->reads.size()) - 1, -1, 0});
      }
      case SizeExprKind::kStackLoadTopMax:
        return Emit(*e.children()[0], body);
      case SizeExprKind::kLoopIndexMax: {
        const int end = Emit(*e.children()[0], body);
        if (end < 0)
          return -1;
        const int one = Push(body, {BodyOp::kConst, -1, -1, 1});
        return Push(body, {BodyOp::kSub, end, one, 0});
      }
      case SizeExprKind::kAdd:
      case SizeExprKind::kSub:
      case SizeExprKind::kMul:
      case SizeExprKind::kMax: {
        const int a = Emit(*e.children()[0], body);
        if (a < 0)
          return -1;
        const int b = Emit(*e.children()[1], body);
        if (b < 0)
          return -1;
        const BodyOp op = e.kind() == SizeExprKind::kAdd   ? BodyOp::kAdd
                          : e.kind() == SizeExprKind::kSub ? BodyOp::kSub
                          : e.kind() == SizeExprKind::kMul ? BodyOp::kMul
                                                           : BodyOp::kMax;
        return Push(body, {op, a, b, 0});
      }
      default:
        return -1;
    }
  }

  const std::string& kernel_;
  const int task_;
  const int stack_;
  const LeafWidthFn& leaf_width_;
  const std::vector<int>* axes_ = nullptr;
  absl::flat_hash_map<const SizeExpr*, int> numbers_;
  absl::flat_hash_map<const SizeExpr*, std::vector<int>> free_vars_;
  absl::flat_hash_set<const SizeExpr*> visited_;
  absl::flat_hash_map<const SizeExpr*, int> captured_;
  std::vector<ReducerSpec> specs_;
};

SizeExpr::Ptr Rebuild(const SizeExpr& e, std::vector<SizeExpr::Ptr> c) {
  switch (e.kind()) {
    case SizeExprKind::kFieldLoad:
      return SizeExpr::FieldLoad(e.snode_id(), std::move(c));
    case SizeExprKind::kNdarrayRead:
      return SizeExpr::NdarrayRead(e.arg(), std::move(c));
    case SizeExprKind::kLoopIndexMax:
      return SizeExpr::LoopIndexMax(c[0]);
    case SizeExprKind::kStackLoadTopMax:
      return SizeExpr::StackLoadTopMax(c[0]);
    case SizeExprKind::kAdd:
      return SizeExpr::Add(c[0], c[1]);
    case SizeExprKind::kSub:
      return SizeExpr::Sub(c[0], c[1]);
    case SizeExprKind::kMul:
      return SizeExpr::Mul(c[0], c[1]);
    case SizeExprKind::kMax:
      return SizeExpr::Max(c[0], c[1]);
    case SizeExprKind::kFloorDiv:
      return SizeExpr::FloorDiv(c[0], c[1]);
    case SizeExprKind::kMod:
      return SizeExpr::Mod(c[0], c[1]);
    case SizeExprKind::kMaxOverRange:
      return SizeExpr::MaxOverRange(e.var_id(), c[0], c[1], c[2]);
    default:
      return nullptr;  // leaves have no children to replace
  }
}

SizeExpr::Ptr Substitute(
    const SizeExpr::Ptr& e,
    const absl::flat_hash_map<const SizeExpr*, int64_t>& values,
    absl::flat_hash_map<const SizeExpr*, SizeExpr::Ptr>* memo) {
  auto hit = values.find(e.get());
  if (hit != values.end())
    return SizeExpr::Const(hit->second);
  if (e->children().empty())
    return e;
  auto done = memo->find(e.get());
  if (done != memo->end())
    return done->second;
  std::vector<SizeExpr::Ptr> children;
  bool changed = false;
  for (const auto& c : e->children()) {
    children.push_back(Substitute(c, values, memo));
    changed |= children.back() != c;
  }
  SizeExpr::Ptr out = changed ? Rebuild(*e, std::move(children)) : e;
  memo->emplace(e.get(), out);
  return out;
}

}  // namespace

std::string ReducerKey::ToString() const {
  return absl::StrCat(kernel, "/task", task, "/stack", stack, "/node", node);
}

std::vector<ReducerSpec> RecognizeReducerSpecs(const std::string& kernel,
                                               int task, int stack,
                                               const ir::SizeExpr& tree,
                                               const LeafWidthFn& leaf_width) {
  return Recognizer(kernel, task, stack, leaf_width).Run(tree);
}

ir::SizeExpr::Ptr SubstituteConstants(
    const ir::SizeExpr::Ptr& tree,
    const absl::flat_hash_map<const ir::SizeExpr*, int64_t>& values) {
  if (values.empty())
    return tree;
  absl::flat_hash_map<const SizeExpr*, SizeExpr::Ptr> memo;
  return Substitute(tree, values, &memo);
}

}  // namespace quadrants::adstack
