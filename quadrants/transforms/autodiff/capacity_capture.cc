#include "quadrants/transforms/autodiff/capacity_capture.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::SizeExpr;
using ir::Stmt;

class Capture {
 public:
  explicit Capture(const ir::SNodeTree& snodes) : snodes_(snodes) {}

  SizeExpr::Ptr Run(const Stmt& loop) {
    // Locals never cross tasks: stores to a stashed variable are in the
    // loop's own task.
    for (const Stmt* c = &loop; c != nullptr; c = c->enclosing()) {
      if (ir::Isa<ir::OffloadedTaskStmt>(c))
        task_ = c;
    }
    if (task_ == nullptr)
      return nullptr;
    const auto* range = ir::DynCast<ir::RangeForStmt>(&loop);
    if (range == nullptr)
      return nullptr;
    SizeExpr::Ptr begin = Convert(range->begin());
    SizeExpr::Ptr end = Convert(range->end());
    if (!begin || !end)
      return nullptr;
    SizeExpr::Ptr tree =
        SizeExpr::Add(SizeExpr::Sub(end, begin), SizeExpr::Const(2));
    // Maximize over the loop indices used, innermost first: bounds of outer
    // loops may themselves use indices of loops further out.
    while (!pending_.empty()) {
      std::sort(pending_.begin(), pending_.end(),
                [](const Var& a, const Var& b) {
                  return Depth(a.loop) > Depth(b.loop);
                });
      Var var = pending_.front();
      pending_.erase(pending_.begin());
      SizeExpr::Ptr lo, hi;
      if (!Range(var, &lo, &hi))
        return nullptr;
      tree = SizeExpr::MaxOverRange(var.id, lo, hi, tree);
    }
    return tree;
  }

 private:
  struct Var {
    const Stmt* loop;
    int axis;
    int id;
  };

  static int Depth(const Stmt* s) {
    int depth = 0;
    for (const Stmt* c = s->enclosing(); c != nullptr; c = c->enclosing())
      ++depth;
    return depth;
  }

  SizeExpr::Ptr BoundVar(const Stmt* loop, int axis) {
    for (const Var& v : all_) {
      if (v.loop == loop && v.axis == axis)
        return SizeExpr::BoundVar(v.id);
    }
    Var v{loop, axis, static_cast<int>(all_.size())};
    all_.push_back(v);
    pending_.push_back(v);
    return SizeExpr::BoundVar(v.id);
  }

  // [lo, hi) of a loop index.
  bool Range(const Var& var, SizeExpr::Ptr* lo, SizeExpr::Ptr* hi) {
    const Stmt* loop = var.loop;
    if (const auto* range = ir::DynCast<ir::RangeForStmt>(loop)) {
      *lo = Convert(range->begin());
      *hi = Convert(range->end());
      return *lo && *hi;
    }
    const auto* task = ir::DynCast<ir::OffloadedTaskStmt>(loop);
    if (task != nullptr && task->task_kind() == ir::TaskKind::kRangeFor) {
      *lo = Convert(task->begin());
      *hi = Convert(task->end());
      return *lo && *hi;
    }
    int snode = -1;
    if (const auto* cells = ir::DynCast<ir::StructForStmt>(loop))
      snode = cells->snode_id();
    if (task != nullptr && task->task_kind() == ir::TaskKind::kStructFor) {
      snode = task->snode_id();
    }
    if (snode < 0)
      return false;
    // An axis several levels index spans the product of their sizes.
    for (const auto& [axis, extent] : snodes_.CellAxes(snode)) {
      if (axis == var.axis) {
        *lo = SizeExpr::Const(0);
        *hi = SizeExpr::Const(extent);
        return true;
      }
    }
    return false;
  }

  std::vector<SizeExpr::Ptr> Indices(const Stmt* ptr) {
    std::vector<SizeExpr::Ptr> indices;
    for (const Stmt* index : ptr->operands()) {
      SizeExpr::Ptr e = Convert(index);
      if (!e)
        return {};
      indices.push_back(e);
    }
    return indices;
  }

  // Whether 64-bit signed arithmetic on `s`'s value equals what the kernel
  // computes: unsigned arithmetic wraps and narrowing or sign-changing
  // casts reinterpret, so those are outside the grammar.
  static bool ValuePreserving(const Stmt* s) {
    const ir::PrimitiveType t = s->type().element();
    if (const auto* u = ir::DynCast<ir::UnaryOpStmt>(s)) {
      const ir::PrimitiveType from = u->input()->type().element();
      if (!u->is_cast() || ir::IsFloat(from))
        return false;
      if (ir::BitWidth(t) < ir::BitWidth(from))
        return false;
      return ir::IsSigned(t) == ir::IsSigned(from) || !ir::IsSigned(from) ||
             ir::BitWidth(t) > ir::BitWidth(from);
    }
    if (ir::Isa<ir::BinaryOpStmt>(s))
      return ir::IsSigned(t);
    return true;
  }

  SizeExpr::Ptr Convert(const Stmt* s) {
    if (++depth_guard_ > 10000)
      return nullptr;
    if (!s->type().is_integer_scalar() || !ValuePreserving(s))
      return nullptr;
    switch (s->kind()) {
      case ir::StmtKind::kConst:
        return SizeExpr::Const(
            static_cast<const ir::ConstStmt*>(s)->value().as_int());
      case ir::StmtKind::kArgLoad:
        return SizeExpr::ArgValue(
            static_cast<const ir::ArgLoadStmt*>(s)->arg());
      case ir::StmtKind::kNdarrayShape: {
        const auto* shape = static_cast<const ir::NdarrayShapeStmt*>(s);
        return SizeExpr::NdarrayShape(shape->arg(), shape->axis());
      }
      case ir::StmtKind::kLoopIndex: {
        const auto* index = static_cast<const ir::LoopIndexStmt*>(s);
        return BoundVar(index->loop(), index->axis());
      }
      case ir::StmtKind::kGlobalLoad: {
        const Stmt* ptr = s->operand(0);
        std::vector<SizeExpr::Ptr> indices = Indices(ptr);
        if (indices.size() != ptr->num_operands())
          return nullptr;
        if (const auto* field = ir::DynCast<ir::FieldPtrStmt>(ptr)) {
          return SizeExpr::FieldLoad(field->snode_id(), indices);
        }
        if (const auto* array = ir::DynCast<ir::NdarrayPtrStmt>(ptr))
          return SizeExpr::NdarrayRead(array->arg(), indices);
        return nullptr;  // block-shared memory is gone after the launch
      }
      case ir::StmtKind::kLocalLoad:
        return Stashed(s->operand(0));
      case ir::StmtKind::kUnaryOp: {
        const auto* u = static_cast<const ir::UnaryOpStmt*>(s);
        if (!u->is_cast())
          return nullptr;
        return Convert(u->input());  // integer widening or narrowing
      }
      case ir::StmtKind::kBinaryOp: {
        const auto* b = static_cast<const ir::BinaryOpStmt*>(s);
        SizeExpr::Ptr lhs = Convert(b->lhs());
        SizeExpr::Ptr rhs = Convert(b->rhs());
        if (!lhs || !rhs)
          return nullptr;
        switch (b->op()) {
          case ir::BinaryOpKind::kAdd:
            return SizeExpr::Add(lhs, rhs);
          case ir::BinaryOpKind::kSub:
            return SizeExpr::Sub(lhs, rhs);
          case ir::BinaryOpKind::kMul:
            return SizeExpr::Mul(lhs, rhs);
          case ir::BinaryOpKind::kMax:
            return SizeExpr::Max(lhs, rhs);
          case ir::BinaryOpKind::kFloorDiv:
            return SizeExpr::FloorDiv(lhs, rhs);
          case ir::BinaryOpKind::kMod:
            return SizeExpr::Mod(lhs, rhs);
          // min(a, b) <= max(a, b): a sound upper bound.
          case ir::BinaryOpKind::kMin:
            return SizeExpr::Max(lhs, rhs);
          default:
            return nullptr;
        }
      }
      default:
        return nullptr;
    }
  }

  // A local read in a bound: bounded by the largest value ever stored.
  SizeExpr::Ptr Stashed(const Stmt* var) {
    if (stashing_.contains(var))
      return nullptr;  // self-referential
    stashing_.insert(var);
    SizeExpr::Ptr result;
    bool ok = true;
    ir::WalkBlock(*task_->blocks().back(), [&](const Stmt* s) {
      if (!ok || !ir::Isa<ir::LocalStoreStmt>(s) || s->operand(0) != var)
        return;
      SizeExpr::Ptr value = Convert(s->operand(1));
      if (!value) {
        ok = false;
        return;
      }
      result = result ? SizeExpr::Max(result, value) : value;
    });
    stashing_.erase(var);
    if (!ok || !result)
      return nullptr;
    return SizeExpr::StackLoadTopMax(result);
  }

  const ir::SNodeTree& snodes_;
  const Stmt* task_ = nullptr;
  std::vector<Var> all_;
  std::vector<Var> pending_;
  absl::flat_hash_set<const Stmt*> stashing_;
  int depth_guard_ = 0;
};

}  // namespace

SizeExpr::Ptr CaptureStackCapacity(const Stmt& loop,
                                   const ir::SNodeTree& snodes) {
  return Capture(snodes).Run(loop);
}

}  // namespace quadrants::transforms::autodiff
