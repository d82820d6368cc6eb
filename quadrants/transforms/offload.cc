#include "quadrants/transforms/offload.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms {
namespace {

using ir::Block;
using ir::OffloadedTaskStmt;
using ir::Stmt;
using ir::TaskKind;

// Where a top-level statement ended up (-1 until its serial run becomes a
// task; dropped runs stay -1), and how many side effects preceded it (its
// "epoch"): a global load can be recomputed in a later task only if no side
// effect happened in between.
struct Origin {
  int task = -1;
  int epoch = 0;
};

class Offloader {
 public:
  explicit Offloader(ir::Kernel& kernel) : kernel_(kernel) {}

  absl::Status Run() {
    std::vector<std::unique_ptr<Stmt>> top = kernel_.body()->TakeAll();
    int epoch = 0;
    std::vector<std::unique_ptr<Stmt>> serial;
    for (auto& stmt : top) {
      Stmt* s = stmt.get();
      const bool loop =
          ir::Isa<ir::RangeForStmt>(s) || ir::Isa<ir::StructForStmt>(s);
      const bool effects = s->has_side_effects();  // `s` may be consumed below
      // A serial task holds statements of one graph section only.
      const bool other_section =
          !serial.empty() &&
          (serial.back()->graph_region() != s->graph_region() ||
           serial.back()->graph_section() != s->graph_section());
      if (loop || other_section)
        QD_RETURN_IF_ERROR(FlushSerial(serial));
      if (loop) {
        QD_RETURN_IF_ERROR(MakeLoopTask(std::move(stmt), epoch));
      } else {
        origins_[s] = Origin{-1, epoch};
        serial.push_back(std::move(stmt));
      }
      if (effects)
        ++epoch;
    }
    QD_RETURN_IF_ERROR(FlushSerial(serial));
    for (auto& task : tasks_)
      kernel_.body()->Append(std::move(task));
    return absl::OkStatus();
  }

 private:
  absl::Status Error(const Stmt& s, absl::string_view what) {
    return MakeError(ErrorKind::kCompilation, s.loc(),
                     absl::StrCat("in kernel '", kernel_.name(), "': ", what));
  }

  // A copy of top-level `value` (and what it depends on) placed in
  // `into` at *position, for a task that starts at `epoch`.
  absl::StatusOr<Stmt*> Recompute(
      Stmt* value, Block* into, size_t* position, int epoch,
      absl::flat_hash_map<const Stmt*, Stmt*>& copies, const Stmt& user,
      int own_task = -1) {
    if (auto it = copies.find(value); it != copies.end())
      return it->second;
    if (ir::Isa<ir::AllocaStmt>(value) || ir::Isa<ir::LocalLoadStmt>(value)) {
      const Stmt& var =
          ir::Isa<ir::AllocaStmt>(value) ? *value : *value->operand(0);
      return Error(
          user,
          absl::StrCat("the local variable defined at ", var.loc().ToString(),
                       " is used on both sides of a top-level parallel "
                       "loop; define it inside the loop, or keep it in a "
                       "field"));
    }
    const bool load = ir::Isa<ir::GlobalLoadStmt>(value);
    if (!value->is_pure() && !load) {
      return Error(user,
                   absl::StrCat("a value computed at ", value->loc().ToString(),
                                " cannot be carried into a parallel loop"));
    }
    if (load && origins_[value].epoch != epoch) {
      return Error(
          user,
          absl::StrCat("the global value read at ", value->loc().ToString(),
                       " may change before the parallel loop that uses it "
                       "runs; read it inside the loop instead"));
    }
    for (Stmt* operand : value->operands()) {
      if (origins_.contains(operand)) {
        QD_RETURN_IF_ERROR(
            Recompute(operand, into, position, epoch, copies, user, own_task)
                .status());
      }
    }
    std::unique_ptr<Stmt> copy = ir::CloneStmt(*value, &copies);
    Stmt* placed = into->Insert((*position)++, std::move(copy));
    // A later task importing a statement that now uses this copy
    // recomputes the copy too.
    if (own_task >= 0)
      origins_[placed] = Origin{own_task, origins_[value].epoch};
    return placed;
  }

  // Rewrites operands in `block` that name top-level statements of other
  // tasks, recomputing them at the start of `block`.
  absl::Status ImportOperands(Block* block, int own_task, int epoch) {
    absl::flat_hash_map<const Stmt*, Stmt*> copies;
    size_t position = 0;
    std::vector<Stmt*> users;
    ir::WalkBlock(*block, [&](Stmt* s) { users.push_back(s); });
    for (Stmt* s : users) {
      for (size_t i = 0; i < s->num_operands(); ++i) {
        Stmt* operand = s->operand(i);
        auto origin = origins_.find(operand);
        if (origin == origins_.end() || origin->second.task == own_task)
          continue;
        QD_ASSIGN_OR_RETURN(Stmt * copy, Recompute(operand, block, &position,
                                                   epoch, copies, *s, own_task));
        s->set_operand(i, copy);
      }
    }
    return absl::OkStatus();
  }

  absl::Status FlushSerial(std::vector<std::unique_ptr<Stmt>>& serial) {
    if (serial.empty())
      return absl::OkStatus();
    bool effects = false;
    for (const auto& s : serial)
      effects |= s->has_side_effects();
    const int index = static_cast<int>(tasks_.size());
    auto task = std::make_unique<OffloadedTaskStmt>(TaskKind::kSerial);
    task->set_loc(serial.front()->loc());
    task->set_graph_section(serial.front()->graph_region(),
                            serial.front()->graph_section());
    for (auto& s : serial)
      task->body()->Append(std::move(s));
    serial.clear();
    if (!effects) {
      // Pure values only: the tasks that use them recompute them.
      pure_only_.push_back(std::move(task));
      return absl::OkStatus();
    }
    for (const auto& s : *task->body())
      origins_[s.get()].task = index;
    const int epoch = origins_[task->body()->at(0)].epoch;
    QD_RETURN_IF_ERROR(ImportOperands(task->body(), index, epoch));
    tasks_.push_back(std::move(task));
    return absl::OkStatus();
  }

  absl::Status MakeLoopTask(std::unique_ptr<Stmt> loop, int epoch) {
    const int index = static_cast<int>(tasks_.size());
    std::unique_ptr<OffloadedTaskStmt> task;
    if (auto* range = ir::DynCast<ir::RangeForStmt>(loop.get())) {
      task = std::make_unique<OffloadedTaskStmt>(TaskKind::kRangeFor);
      absl::flat_hash_map<const Stmt*, Stmt*> copies;
      size_t position = 0;
      Stmt* bounds[2];
      for (int k = 0; k < 2; ++k) {
        Stmt* bound = range->operand(k);
        if (!origins_.contains(bound)) {
          return Error(*range, "loop bound is not defined at the top level");
        }
        QD_ASSIGN_OR_RETURN(bounds[k],
                            Recompute(bound, task->prologue(), &position, epoch,
                                      copies, *range));
      }
      task->SetBounds(bounds[0], bounds[1]);
    } else {
      task = std::make_unique<OffloadedTaskStmt>(
          TaskKind::kStructFor,
          static_cast<ir::StructForStmt*>(loop.get())->snode_id());
    }
    task->set_loc(loop->loc());
    task->set_graph_section(loop->graph_region(), loop->graph_section());
    task->set_block_dim(loop->block_dim());
    task->set_loop_name(loop->loop_name());
    Block* body = loop->blocks()[0];
    for (auto& s : body->TakeAll())
      task->body()->Append(std::move(s));
    // Loop indices now refer to the task.
    ir::WalkBlock(*task->body(),
                  [&](Stmt* s) { s->ReplaceOperand(loop.get(), task.get()); });
    QD_RETURN_IF_ERROR(ImportOperands(task->body(), index, epoch));
    tasks_.push_back(std::move(task));
    return absl::OkStatus();
  }

  ir::Kernel& kernel_;
  absl::flat_hash_map<const Stmt*, Origin> origins_;
  std::vector<std::unique_ptr<OffloadedTaskStmt>> tasks_;
  // Dropped serial runs stay alive while tasks copy from them.
  std::vector<std::unique_ptr<OffloadedTaskStmt>> pure_only_;
};

bool Uses(const Stmt& s, const Stmt* value) {
  bool found = false;
  auto check = [&](const Stmt* t) {
    for (const Stmt* operand : t->operands())
      found |= operand == value;
  };
  check(&s);
  for (Block* block : s.blocks())
    ir::WalkBlock(*block, check);
  return found;
}

// Top-level locals are declared at the start of the kernel (Python scoping);
// one whose address a call takes stays in memory (promote_locals keeps it),
// so it moves down to its first use and lands in the task that uses it.
void SinkCalledLocals(Block& root) {
  absl::flat_hash_set<const Stmt*> called;
  ir::WalkBlock(root, [&](const Stmt* s) {
    if (ir::Isa<ir::FuncCallStmt>(s)) {
      for (const Stmt* operand : s->operands())
        called.insert(operand);
    }
  });
  std::vector<const Stmt*> locals;
  for (const auto& s : root) {
    if (called.contains(s.get()) && ir::Isa<ir::AllocaStmt>(s.get()))
      locals.push_back(s.get());
  }
  for (const Stmt* local : locals) {
    size_t first = root.IndexOf(local) + 1;
    while (first < root.size() && !Uses(*root.at(first), local))
      ++first;
    if (first == root.size())
      continue;
    std::unique_ptr<Stmt> alloca = root.Extract(local);
    root.Insert(first - 1, std::move(alloca));
  }
}

}  // namespace

absl::Status Offload(ir::Kernel& kernel) {
  SinkCalledLocals(*kernel.body());
  return Offloader(kernel).Run();
}

}  // namespace quadrants::transforms
