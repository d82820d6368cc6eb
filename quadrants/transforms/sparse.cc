#include "quadrants/transforms/sparse.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms {
namespace {

using ir::BinaryOpKind;
using ir::FieldPtrStmt;
using ir::PrimitiveType;
using ir::SNode;
using ir::Stmt;

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

int Log2(int64_t v) {
  int k = 0;
  while ((int64_t{1} << k) < v)
    ++k;
  return k;
}

// How a field pointer is used: only read, or written (stored to, updated
// atomically, handed to a pool operation or a function).
enum class Access { kRead, kWrite };

class SparseLowering {
 public:
  SparseLowering(ir::Kernel& kernel, const ir::SNodeTree& snodes)
      : kernel_(kernel), tree_(snodes), b_(&kernel, &snodes) {
    for (int id : kernel.no_activate())
      no_activate_.insert(id);
  }

  absl::Status Run() {
    std::vector<ir::OffloadedTaskStmt*> tasks;
    for (const auto& stmt : *kernel_.body()) {
      if (auto* task = ir::DynCast<ir::OffloadedTaskStmt>(stmt.get()))
        tasks.push_back(task);
    }
    for (ir::OffloadedTaskStmt* task : tasks) {
      if (task->task_kind() == ir::TaskKind::kStructFor &&
          !tree_.SparseAncestors(task->snode_id()).empty()) {
        LowerStructFor(task);
      }
    }
    CollectAccesses();
    // Lowering a pointer adds pointers to hidden places, lowered in turn.
    while (!pending_.empty()) {
      FieldPtrStmt* ptr = pending_.back();
      pending_.pop_back();
      LowerFieldPtr(ptr);
    }
    return absl::OkStatus();
  }

 private:
  // ---- small builders (typed: this pass runs after type checking) -------
  Stmt* I32(int64_t v) {
    return b_.Const(ir::Constant::Int(PrimitiveType::kI32, v));
  }
  Stmt* Bin(BinaryOpKind op, Stmt* x, Stmt* y) {
    Stmt* s = b_.Binary(op, x, y);
    const bool cmp = op == BinaryOpKind::kLt || op == BinaryOpKind::kNe ||
                     op == BinaryOpKind::kEq || op == BinaryOpKind::kGe;
    s->set_type(ir::DataType::Scalar(cmp ? PrimitiveType::kU1
                                         : PrimitiveType::kI32));
    return s;
  }
  Stmt* AsI32(Stmt* x) {
    if (x->type().element() == PrimitiveType::kI32)
      return x;
    return b_.Cast(x, PrimitiveType::kI32);
  }
  // x / d and x % d for non-negative x.
  Stmt* Quot(Stmt* x, int64_t d) {
    if (d == 1)
      return x;
    if (IsPowerOfTwo(d))
      return Bin(BinaryOpKind::kShr, x, I32(Log2(d)));
    return Bin(BinaryOpKind::kFloorDiv, x, I32(d));
  }
  Stmt* Rem(Stmt* x, int64_t d) {
    if (d == 1)
      return I32(0);
    if (IsPowerOfTwo(d))
      return Bin(BinaryOpKind::kBitAnd, x, I32(d - 1));
    return Bin(BinaryOpKind::kMod, x, I32(d));
  }
  FieldPtrStmt* Ptr(int place, std::vector<Stmt*> indices, Access access) {
    auto* p = b_.Make<FieldPtrStmt>(place, tree_.node(place).dtype,
                                    std::move(indices));
    p->set_label(tree_.node(place).name);
    if (!tree_.SparseAncestors(place).empty()) {
      access_[p] = access;
      pending_.push_back(p);
    }
    return p;
  }
  Stmt* Load(Stmt* ptr) { return b_.GlobalLoad(ptr); }

  // ---- index spaces -------------------------------------------------------
  // Indices of `to`'s cells from indices over extents `from` (`to` is `from`
  // or one of its ancestors: each axis divides by the levels in between).
  std::vector<Stmt*> ToSpace(const std::vector<Stmt*>& indices,
                             const std::vector<int64_t>& from, int to) {
    const std::vector<int64_t> target = tree_.Extents(to);
    std::vector<Stmt*> out;
    for (size_t a = 0; a < target.size(); ++a) {
      const int64_t own = a < from.size() ? from[a] : 1;
      out.push_back(a < indices.size() ? Quot(indices[a], own / target[a])
                                       : I32(0));
    }
    return out;
  }
  // Per-axis indices of row-major cell number `linear` over `extents`.
  std::vector<Stmt*> Decompose(Stmt* linear,
                               const std::vector<int64_t>& extents) {
    std::vector<Stmt*> out(extents.size(), nullptr);
    for (int a = static_cast<int>(extents.size()) - 1; a >= 0; --a) {
      out[a] = a == 0 ? linear : Rem(linear, extents[a]);
      if (a > 0)
        linear = Quot(linear, extents[a]);
    }
    return out;
  }
  // The table entry (or flag) of the cell of sparse `level` holding the
  // element at `indices` over `extents`.
  FieldPtrStmt* Entry(int level, const std::vector<Stmt*>& indices,
                      const std::vector<int64_t>& extents, Access access) {
    const SNode& n = tree_.node(level);
    std::vector<Stmt*> cell = ToSpace(indices, extents, level);
    if (n.kind == SNode::Kind::kDynamic)
      cell[n.axes[0]] = Quot(cell[n.axes[0]], n.chunk_size);
    return Ptr(n.table, std::move(cell), access);
  }
  // The length of the list of dynamic `level` holding the element.
  FieldPtrStmt* Length(int level, const std::vector<Stmt*>& indices,
                       const std::vector<int64_t>& extents, Access access) {
    const SNode& n = tree_.node(level);
    return Ptr(n.length, ToSpace(indices, extents, n.parent), access);
  }
  Stmt* IsActive(int level, const std::vector<Stmt*>& indices,
                 const std::vector<int64_t>& extents) {
    const SNode& n = tree_.node(level);
    if (n.kind == SNode::Kind::kDynamic) {
      Stmt* j = ToSpace(indices, extents, level)[n.axes[0]];
      return Bin(BinaryOpKind::kLt, j,
                 Load(Length(level, indices, extents, Access::kRead)));
    }
    return Bin(BinaryOpKind::kNe,
               Load(Entry(level, indices, extents, Access::kRead)), I32(0));
  }

  // ---- field pointers -----------------------------------------------------
  void CollectAccesses() {
    absl::flat_hash_map<const Stmt*, Access> uses;
    ir::WalkKernel(kernel_, [&](const Stmt* s) {
      for (size_t k = 0; k < s->num_operands(); ++k) {
        const Stmt* op = s->operand(k);
        if (!ir::Isa<FieldPtrStmt>(op))
          continue;
        // Releasing reads the entry where it is: under an inactive
        // ancestor that is block 0, whose zero entry releases nothing.
        const auto* release = ir::DynCast<ir::SNodeOpStmt>(s);
        const bool reads = ir::Isa<ir::GlobalLoadStmt>(s) ||
                           (release != nullptr &&
                            release->op() == ir::SNodeOpKind::kRelease);
        if (!reads)
          uses[op] = Access::kWrite;
        else
          uses.try_emplace(op, Access::kRead);
      }
    });
    ir::WalkKernel(kernel_, [&](const Stmt* s) {
      auto* ptr = const_cast<FieldPtrStmt*>(ir::DynCast<FieldPtrStmt>(s));
      if (ptr == nullptr || ptr->block() != nullptr ||
          tree_.SparseAncestors(ptr->snode_id()).empty()) {
        return;
      }
      auto use = uses.find(ptr);
      access_[ptr] = use == uses.end() ? Access::kRead : use->second;
      pending_.push_back(ptr);
    });
  }

  void LowerFieldPtr(FieldPtrStmt* ptr) {
    const int place = ptr->snode_id();
    const std::vector<int> sparse = tree_.SparseAncestors(place);
    const int nearest = sparse.back();
    int pool = -1;
    for (int id : sparse) {
      if (ir::OwnsPool(tree_.node(id).kind))
        pool = id;
    }
    const bool write = access_.at(ptr) == Access::kWrite;
    ir::Block* block = ptr->parent();
    b_.SetInsertPoint(block, block->IndexOf(ptr));
    b_.SetLocation(ptr->loc());
    const std::vector<int64_t> extents = tree_.Extents(place);
    std::vector<Stmt*> indices;
    for (size_t a = 0; a < ptr->num_indices(); ++a)
      indices.push_back(AsI32(ptr->index(a)));
    const bool activates = write && !no_activate_.contains(nearest);
    const SNode& n = tree_.node(nearest);
    if (activates && n.kind == SNode::Kind::kBitmasked) {
      b_.GlobalStore(Entry(nearest, indices, extents, Access::kWrite), I32(1));
    }
    if (activates && n.kind == SNode::Kind::kDynamic) {
      Stmt* j = ToSpace(indices, extents, nearest)[n.axes[0]];
      b_.Atomic(ir::AtomicOpKind::kMax,
                Length(nearest, indices, extents, Access::kWrite),
                Bin(BinaryOpKind::kAdd, j, I32(1)));
    }
    if (pool < 0)
      return;
    Stmt* owner;
    if (write && !no_activate_.contains(pool)) {
      auto* acquire = b_.Make<ir::SNodeOpStmt>(
          ir::SNodeOpKind::kAcquire, pool,
          Entry(pool, indices, extents, Access::kWrite));
      acquire->set_label(ptr->label().empty() ? tree_.node(place).name
                                              : ptr->label());
      owner = acquire;
    } else {
      owner = Load(Entry(pool, indices, extents, Access::kRead));
      if (write) {
        // Block 1 takes the writes a no_activate kernel makes to inactive
        // cells.
        Stmt* missing = Bin(BinaryOpKind::kEq, owner, I32(0));
        owner = b_.Select(missing, I32(1), owner);
        owner->set_type(ir::DataType::Scalar(PrimitiveType::kI32));
      }
    }
    ptr->set_block(owner);
  }

  // ---- struct-for ---------------------------------------------------------
  void LowerStructFor(ir::OffloadedTaskStmt* task) {
    const int target = task->snode_id();
    const std::vector<int> sparse = tree_.SparseAncestors(target);
    int listed = -1;  // the deepest pointer or bitmasked level
    int dynamic = -1;
    for (int id : sparse) {
      if (tree_.node(id).kind == SNode::Kind::kDynamic)
        dynamic = id;
      else
        listed = id;
    }
    ir::OffloadedTaskStmt* body_task = task;
    std::vector<Stmt*> indices;
    const std::vector<int64_t> extents = tree_.Extents(target);
    if (listed >= 0) {
      body_task = ListCells(task, listed, &indices);
    } else {
      ir::Block* body = task->body();
      b_.SetInsertPoint(body, 0);
      for (size_t a = 0; a < extents.size(); ++a)
        indices.push_back(b_.Make<ir::LoopIndexStmt>(task, static_cast<int>(a)));
    }
    if (dynamic >= 0)
      SkipPastLength(body_task, dynamic, indices, extents);
  }

  // Replaces struct_for `task` by the tasks that list the active cells of
  // `level` and a range_for over them; returns the range_for, whose body
  // starts by computing the cell's indices (`indices`).
  ir::OffloadedTaskStmt* ListCells(ir::OffloadedTaskStmt* task, int level,
                                   std::vector<Stmt*>* indices) {
    const SNode& n = tree_.node(level);
    const std::vector<int64_t> level_extents = tree_.Extents(level);
    const std::vector<int64_t> extents = tree_.Extents(task->snode_id());
    const int64_t cells = tree_.NumCells(level);
    int64_t below = 1;
    std::vector<int64_t> inner(extents.size(), 1);
    for (size_t a = 0; a < extents.size(); ++a) {
      inner[a] = extents[a] / (a < level_extents.size() ? level_extents[a] : 1);
      below *= inner[a];
    }
    ir::Block* top = kernel_.body();
    const size_t at = top->IndexOf(task);
    b_.SetLocation(task->loc());
    // 1. count = 0.
    auto reset = std::make_unique<ir::OffloadedTaskStmt>(ir::TaskKind::kSerial);
    b_.SetInsertPoint(reset->body(), 0);
    b_.GlobalStore(Ptr(n.list_count, {}, Access::kWrite), I32(0));
    // 2. Every active cell of the level appends itself.
    auto scan = std::make_unique<ir::OffloadedTaskStmt>(ir::TaskKind::kRangeFor);
    b_.SetInsertPoint(scan->prologue(), 0);
    scan->SetBounds(I32(0), I32(cells));
    b_.SetInsertPoint(scan->body(), 0);
    Stmt* cell = b_.Make<ir::LoopIndexStmt>(scan.get(), 0);
    Stmt* active =
        IsActive(level, Decompose(cell, level_extents), level_extents);
    auto* branch = b_.Make<ir::IfStmt>(active);
    b_.SetInsertPoint(branch->true_block(), 0);
    Stmt* slot = b_.Atomic(ir::AtomicOpKind::kAdd,
                           Ptr(n.list_count, {}, Access::kWrite), I32(1));
    b_.GlobalStore(Ptr(n.list, {slot}, Access::kWrite), cell);
    // 3. The body over (listed cell, cell below it) pairs.
    auto run = std::make_unique<ir::OffloadedTaskStmt>(ir::TaskKind::kRangeFor);
    b_.SetInsertPoint(run->prologue(), 0);
    Stmt* count = Load(Ptr(n.list_count, {}, Access::kRead));
    run->SetBounds(I32(0), Bin(BinaryOpKind::kMul, count, I32(below)));
    std::vector<std::unique_ptr<Stmt>> body = task->body()->TakeAll();
    b_.SetInsertPoint(run->body(), 0);
    Stmt* k = b_.Make<ir::LoopIndexStmt>(run.get(), 0);
    Stmt* listed = Load(Ptr(n.list, {Quot(k, below)}, Access::kRead));
    std::vector<Stmt*> outer = Decompose(listed, level_extents);
    std::vector<Stmt*> within = Decompose(Rem(k, below), inner);
    indices->clear();
    for (size_t a = 0; a < extents.size(); ++a) {
      Stmt* o = a < outer.size() ? outer[a] : I32(0);
      indices->push_back(
          inner[a] == 1 ? o
                        : Bin(BinaryOpKind::kAdd,
                              Bin(BinaryOpKind::kMul, o, I32(inner[a])),
                              within[a]));
    }
    for (auto& stmt : body)
      run->body()->Append(std::move(stmt));
    RetargetLoopIndices(run->body(), task, *indices);
    ir::OffloadedTaskStmt* result = run.get();
    top->Insert(at, std::move(run));
    top->Insert(at, std::move(scan));
    top->Insert(at, std::move(reset));
    top->Erase(task);
    return result;
  }

  // Uses of `old`'s loop indices inside `body` become `indices`.
  void RetargetLoopIndices(ir::Block* body, const Stmt* old,
                           const std::vector<Stmt*>& indices) {
    std::vector<ir::LoopIndexStmt*> stale;
    ir::WalkBlock(*body, [&](const Stmt* s) {
      auto* index =
          const_cast<ir::LoopIndexStmt*>(ir::DynCast<ir::LoopIndexStmt>(s));
      if (index != nullptr && index->loop() == old)
        stale.push_back(index);
    });
    absl::flat_hash_map<const Stmt*, Stmt*> replace;
    for (ir::LoopIndexStmt* index : stale) {
      Stmt* value = indices.at(index->axis());
      if (value->type() != index->type()) {
        b_.SetInsertPoint(index->parent(), index->parent()->IndexOf(index));
        value = b_.Cast(value, index->type().element());
      }
      replace[index] = value;
    }
    ir::WalkBlock(*body, [&](const Stmt* s) {
      for (size_t k = 0; k < s->num_operands(); ++k) {
        auto it = replace.find(s->operand(k));
        if (it != replace.end())
          const_cast<Stmt*>(s)->set_operand(k, it->second);
      }
    });
    for (ir::LoopIndexStmt* index : stale)
      index->parent()->Erase(index);
  }

  // Wraps the body of `task` (after its first `indices` statements) in
  // `if j < length`.
  void SkipPastLength(ir::OffloadedTaskStmt* task, int level,
                      const std::vector<Stmt*>& indices,
                      const std::vector<int64_t>& extents) {
    ir::Block* body = task->body();
    size_t start = 0;
    for (Stmt* s : indices)
      start = std::max(start, body->IndexOf(s) + 1);
    std::vector<std::unique_ptr<Stmt>> all = body->TakeAll();
    for (size_t k = 0; k < start; ++k)
      body->Append(std::move(all[k]));
    b_.SetInsertPointToEnd(body);
    b_.SetLocation(task->loc());
    Stmt* inside = IsActive(level, indices, extents);
    auto* branch = b_.Make<ir::IfStmt>(inside);
    for (size_t k = start; k < all.size(); ++k)
      branch->true_block()->Append(std::move(all[k]));
  }

  ir::Kernel& kernel_;
  const ir::SNodeTree& tree_;
  ir::IRBuilder b_;
  absl::flat_hash_set<int> no_activate_;
  absl::flat_hash_map<const Stmt*, Access> access_;
  std::vector<FieldPtrStmt*> pending_;
};

}  // namespace

absl::Status LowerSparse(ir::Kernel& kernel, const ir::SNodeTree& snodes) {
  if (!snodes.has_sparse())
    return absl::OkStatus();
  return SparseLowering(kernel, snodes).Run();
}

}  // namespace quadrants::transforms
