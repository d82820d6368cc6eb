#include "quadrants/transforms/autodiff/reverse_mode.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"
#include "quadrants/transforms/autodiff/atomic_results.h"
#include "quadrants/transforms/autodiff/backup_values.h"
#include "quadrants/transforms/autodiff/companion_params.h"
#include "quadrants/transforms/autodiff/capacity_capture.h"
#include "quadrants/transforms/autodiff/carried_values.h"
#include "quadrants/transforms/autodiff/derivative_rules.h"
#include "quadrants/transforms/autodiff/global_access_rule.h"
#include "quadrants/transforms/autodiff/loop_shapes.h"
#include "quadrants/transforms/autodiff/structure_continues.h"
#include "quadrants/transforms/type_check.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::BinaryOpKind;
using ir::Block;
using ir::IRBuilder;
using ir::PrimitiveType;
using ir::Stmt;
using ir::StmtKind;
using ir::UnaryOpKind;
using Map = absl::flat_hash_map<const Stmt*, Stmt*>;

class GradTaskBuilder : public AdjointSweep {
 public:
  GradTaskBuilder(ir::Kernel& kernel, const ir::SNodeTree& snodes,
                  const ReverseModeOptions& options,
                  const absl::flat_hash_map<int, int>& adjoint_args,
                  ir::OffloadedTaskStmt* grad_task)
      : kernel_(kernel),
        snodes_(snodes),
        options_(options),
        adjoint_args_(adjoint_args),
        task_(grad_task),
        b_(&kernel, &snodes) {}

  absl::Status Build(const ir::OffloadedTaskStmt& forward) {
    Map primal;
    primal[&forward] = task_;
    b_.SetInsertPointToEnd(task_->body());
    QD_RETURN_IF_ERROR(Replay(*forward.body(), primal, /*push=*/true));
    return Reverse(*forward.body(), primal);
  }

 private:
  absl::Status Error(const Stmt& s, absl::string_view what) {
    return MakeError(ErrorKind::kCompilation, s.loc(),
                     absl::StrCat("in kernel '", kernel_.name(), "': ", what));
  }

  // ---- forward replay
  // --------------------------------------------------------- `push`: the loops
  // of `block` are reversed right after this replay, so loops that need the
  // adstack push their per-iteration state here. Loops nested in a loop are
  // replayed again inside each of its reverse iterations, and push there
  // instead.
  absl::Status Replay(const Block& block, Map& primal, bool push) {
    for (const auto& stmt : block) {
      QD_RETURN_IF_ERROR(ReplayStmt(*stmt, primal, push));
    }
    return absl::OkStatus();
  }

  absl::Status ReplayStmt(const Stmt& s, Map& primal, bool push) {
    b_.SetLocation(s.loc());
    switch (s.kind()) {
      case StmtKind::kGlobalStore:
      case StmtKind::kAssert:
      case StmtKind::kDebugPrint:
        return absl::OkStatus();  // no side effects in the gradient kernel
      case StmtKind::kRandom:
        // The replay would draw new numbers, not the forward pass's ones.
        return MakeError(
            ErrorKind::kGradient, s.loc(),
            absl::StrCat(
                "in kernel '", kernel_.name(), "': ",
                "qd.random() cannot be used in a kernel that is "
                "differentiated: the gradient kernel recomputes the "
                "forward pass and would draw different random numbers, "
                "so the gradients would be wrong; draw them in a "
                "separate kernel into a field or ndarray and read that "
                "(RandStmt not supported in reverse mode)"));
      case StmtKind::kSharedArray:
      case StmtKind::kSharedPtr:
      case StmtKind::kSimtOp:
        // Their adjoints would need the block's other threads in reverse
        // order: a transposed cooperation the gradient kernel lacks.
        return MakeError(
            ErrorKind::kGradient, s.loc(),
            absl::StrCat("in kernel '", kernel_.name(), "': ",
                         s.kind() == StmtKind::kSimtOp
                             ? absl::StrCat("qd.simt primitive '",
                                            ir::OpName(static_cast<const ir::SimtOpStmt&>(s).op()),
                                            "'")
                             : std::string("qd.simt.block.SharedArray"),
                         " cannot be differentiated: reverse mode has no "
                         "adjoint for block and subgroup cooperation; compute "
                         "it in a kernel that is not differentiated"));
      case StmtKind::kThreadIndex:
        // The thread that runs an iteration may differ between the two
        // launches (CPU threads take iterations as they come).
        return MakeError(
            ErrorKind::kGradient, s.loc(),
            absl::StrCat(
                "in kernel '", kernel_.name(), "': ",
                "qd.global_thread_idx() cannot be used in a kernel that is "
                "differentiated: the gradient kernel recomputes the forward "
                "pass, where another thread may run the same iteration, so "
                "the gradients would be wrong; use the loop index instead"));
      case StmtKind::kAtomicOp:
        primal[&s] = b_.GlobalLoad(primal.at(s.operand(0)));
        return absl::OkStatus();
      case StmtKind::kBreak:
        b_.Break();  // the replay runs loops exactly as the forward pass did
        return absl::OkStatus();
      case StmtKind::kContinue:
        b_.Continue();
        return absl::OkStatus();
      case StmtKind::kLoopIndex:
        if (auto it = index_override_.find(s.operand(0));
            it != index_override_.end()) {
          primal[&s] = it->second;
          return absl::OkStatus();
        }
        break;
      case StmtKind::kLocalLoad:
        if (auto it = frozen_.find(s.operand(0)); it != frozen_.end()) {
          primal[&s] = it->second;
          return absl::OkStatus();
        }
        break;
      case StmtKind::kIf: {
        const auto& branch = static_cast<const ir::IfStmt&>(s);
        auto* copy = b_.If(primal.at(branch.cond()));
        primal[&s] = copy;
        {
          auto scope = b_.EnterBlock(copy->true_block());
          QD_RETURN_IF_ERROR(Replay(*branch.true_block(), primal, push));
        }
        auto scope = b_.EnterBlock(copy->false_block());
        return Replay(*branch.false_block(), primal, push);
      }
      case StmtKind::kRangeFor:
      case StmtKind::kStructFor:
      case StmtKind::kWhile:
        return ReplayLoop(s, primal, push);
      default:
        break;
    }
    primal[&s] = b_.Insert(ir::CloneStmt(s, &primal));
    return absl::OkStatus();
  }

  // How a checkpointable loop runs in this launch (see LaunchSchedule).
  struct Schedule {
    Stmt* on = nullptr;       // nonzero: run in segments
    Stmt* segment = nullptr;  // iterations per segment, in the index type
  };

  absl::Status ReplayLoop(const Stmt& loop, Map& primal, bool push) {
    // Variables the loop reads but never writes keep their value through
    // it; the reverse sweep replays iterations after later code may have
    // changed them, so it reads these snapshots instead.
    const auto written = WrittenVariables(loop);
    auto& snapshot = snapshots_[&loop];
    snapshot.clear();
    for (const Block* block : loop.blocks()) {
      ir::WalkBlock(*block, [&](const Stmt* s) {
        if (!ir::Isa<ir::LocalLoadStmt>(s))
          return;
        const Stmt* var = s->operand(0);
        if (var->IsInside(&loop) || written.contains(var) ||
            snapshot.contains(var))
          return;
        auto frozen = frozen_.find(var);
        snapshot[var] = frozen != frozen_.end() ? frozen->second
                                                : b_.LocalLoad(primal.at(var));
      });
    }
    const bool stacked = push && NeedsStack(loop);
    Stmt* trips = nullptr;
    if (stacked && ir::Isa<ir::WhileStmt>(&loop) &&
        StartsWithConditionCheck(loop)) {
      trips = Counter(loop);
      b_.LocalStore(trips,
                    b_.ConstI32(0));  // before the loop: counts its trips
    }
    if (stacked && Checkpointable(loop, primal)) {
      // One copy per schedule, chosen once per launch: each loop then runs
      // only the pushes its schedule needs, with nothing to test per
      // iteration.
      const Schedule schedule = LaunchSchedule(loop, primal);
      auto* segmented = b_.If(schedule.on);
      {
        auto scope = b_.EnterBlock(segmented->true_block());
        QD_RETURN_IF_ERROR(ReplayCopy(loop, primal, Pushes::kCheckpoints,
                                      &schedule, trips, written));
      }
      auto scope = b_.EnterBlock(segmented->false_block());
      return ReplayCopy(loop, primal, Pushes::kEveryIteration, nullptr, trips,
                        written);
    }
    return ReplayCopy(loop, primal,
                      stacked ? Pushes::kEveryIteration : Pushes::kNone,
                      nullptr, trips, written);
  }

  // What a forward replay of a loop pushes: nothing, every iteration's
  // carried state and stacked derivatives, or (checkpointed) the carried
  // state at each segment start.
  enum class Pushes { kNone, kEveryIteration, kCheckpoints };

  // Emits one copy of `loop` that replays it with `pushes` (`schedule` for
  // checkpoints; `trips` counts a while loop's trips).
  absl::Status ReplayCopy(const Stmt& loop, Map& primal, Pushes pushes,
                          const Schedule* schedule, Stmt* trips,
                          const absl::flat_hash_set<const Stmt*>& written) {
    Stmt* copy = nullptr;
    if (const auto* range = ir::DynCast<ir::RangeForStmt>(&loop)) {
      copy = b_.RangeFor(primal.at(range->begin()), primal.at(range->end()));
    } else if (const auto* cells = ir::DynCast<ir::StructForStmt>(&loop)) {
      copy = b_.StructFor(cells->snode_id());
    } else {
      copy = b_.While();
    }
    primal[&loop] = copy;
    auto scope = b_.EnterBlock(copy->blocks()[0]);
    const Block& body = *loop.blocks()[0];
    size_t first = 0;
    if (trips != nullptr) {
      // The while condition and its check come first; an iteration that
      // passes them is one to reverse.
      const int check = ConditionCheck(loop);
      for (int i = 0; i <= check; ++i) {
        QD_RETURN_IF_ERROR(ReplayStmt(*body.at(i), primal, false));
      }
      b_.LocalStore(trips, b_.Add(b_.LocalLoad(trips), b_.ConstI32(1)));
      first = check + 1;
    }
    if (pushes == Pushes::kCheckpoints) {
      const auto* range = static_cast<const ir::RangeForStmt*>(&loop);
      PushCheckpoint(loop, primal, *schedule,
                     b_.Sub(b_.LoopIndex(copy), primal.at(range->begin())));
    } else if (pushes == Pushes::kEveryIteration) {
      PushCarried(loop, primal);
    }
    for (size_t i = first; i < body.size(); ++i) {
      const Stmt& s = *body.at(i);
      QD_RETURN_IF_ERROR(ReplayStmt(s, primal, false));
      // Checkpointed, the segment's recomputation stacks derivatives.
      if (pushes == Pushes::kEveryIteration &&
          IsStackedDerivative(loop, s, written)) {
        PushDerivative(loop, s, primal);
      }
    }
    return absl::OkStatus();
  }

  // ---- checkpointing
  // ------------------------------------------------------------ A stacked
  // range-for whose trip count the launch knows, outermost in its task, may
  // run checkpointed: the launch picks, per loop, whether and with which
  // segment length, from the adstack budget, and tells the kernel through
  // the stacks' capacities. Loops nested in it are recomputed inside each
  // segment with their own (per outer iteration) stacks; they stay
  // unsegmented, so their many reversals run no segment loop.

  bool Checkpointable(const Stmt& loop, const Map& primal) {
    if (!options_.checkpointing || !MaySegment(loop))
      return false;
    const auto carried = OrderedCarried(loop);
    if (carried.empty())
      return false;
    const auto* stack =
        static_cast<const ir::AdStackAllocaStmt*>(Stack(loop, carried[0], primal));
    return stack->max_size() > 0 || stack->size_expr() != nullptr;
  }

  // The group id of `loop`'s stacks, assigned in order of first use.
  int Group(const Stmt& loop) {
    const int next = static_cast<int>(groups_.size());
    return groups_.try_emplace(&loop, next).first->second;
  }

  // The stack of `var`'s value at every segment start of `loop`.
  Stmt* CheckpointStack(const Stmt& loop, const Stmt* var, const Map& primal) {
    auto key = std::make_pair(&loop, var);
    auto it = checkpoint_stacks_.find(key);
    if (it != checkpoint_stacks_.end())
      return it->second;
    const auto* segment =
        static_cast<const ir::AdStackAllocaStmt*>(Stack(loop, var, primal));
    auto stack = std::make_unique<ir::AdStackAllocaStmt>(segment->dtype(),
                                                         segment->max_size());
    stack->set_size_expr(segment->size_expr());
    stack->set_checkpoint(Group(loop), ir::AdStackRole::kCheckpoint);
    stack->set_loc(loop.loc());
    Stmt* slot = b_.InsertAt(task_->body(), 0, std::move(stack));
    checkpoint_stacks_[key] = slot;
    return slot;
  }

  // Reads the schedule the launch chose for `loop`: checkpoint stacks of
  // capacity 2 or more, and segments of (segment stack capacity - 2).
  Schedule LaunchSchedule(const Stmt& loop, const Map& primal) {
    const Stmt* first = OrderedCarried(loop)[0];
    const auto& range = static_cast<const ir::RangeForStmt&>(loop);
    const PrimitiveType t = primal.at(range.begin())->type().element();
    auto in_index_type = [&](Stmt* v) {
      return t == PrimitiveType::kI32 ? v : b_.Cast(v, t);
    };
    Schedule schedule;
    schedule.on = b_.Binary(
        BinaryOpKind::kGe,
        b_.AdStackCapacity(CheckpointStack(loop, first, primal)),
        b_.ConstI32(2));
    Stmt* length = b_.Binary(
        BinaryOpKind::kMax,
        b_.Sub(b_.AdStackCapacity(Stack(loop, first, primal)), b_.ConstI32(2)),
        b_.ConstI32(1));
    schedule.segment = in_index_type(length);
    return schedule;
  }

  // A checkpointed forward replay's push at iteration `offset` (from the
  // loop's begin): the carried state, at each segment's first iteration.
  void PushCheckpoint(const Stmt& loop, Map& primal, const Schedule& schedule,
                      Stmt* offset) {
    const PrimitiveType t = schedule.segment->type().element();
    auto* starts = b_.If(b_.Binary(
        BinaryOpKind::kEq,
        b_.Binary(BinaryOpKind::kMod, offset, schedule.segment),
        b_.Const(ir::Constant::Int(t, 0))));
    auto scope = b_.EnterBlock(starts->true_block());
    for (const Stmt* var : OrderedCarried(loop)) {
      b_.AdStackPush(CheckpointStack(loop, var, primal),
                     b_.LocalLoad(primal.at(var)));
    }
  }

  // The reversal of a checkpointed range-for: segments from the last, each
  // restored from its checkpoint, recomputed forward onto the segment
  // stacks, then swept backwards. Unsegmented, it is one segment spanning the
  // loop, swept from the stacks the forward replay filled.
  absl::Status ReverseInSegments(const ir::RangeForStmt& loop, Map& primal) {
    Stmt* begin = primal.at(loop.begin());
    Stmt* end = primal.at(loop.end());
    const PrimitiveType t = begin->type().element();
    auto constant = [&](int64_t v) { return b_.Const(ir::Constant::Int(t, v)); };
    const Schedule schedule = LaunchSchedule(loop, primal);
    Stmt* trips = b_.Binary(BinaryOpKind::kMax, b_.Sub(end, begin), constant(0));
    Stmt* segments = b_.Select(
        schedule.on,
        b_.Binary(BinaryOpKind::kFloorDiv,
                  b_.Sub(b_.Add(trips, schedule.segment), constant(1)),
                  schedule.segment),
        constant(1));
    Stmt* sweep = b_.RangeFor(constant(0), segments);
    auto scope = b_.EnterBlock(sweep->blocks()[0]);
    Stmt* segment =
        b_.Sub(b_.Sub(segments, constant(1)), b_.LoopIndex(sweep));
    Stmt* lo = b_.Select(schedule.on,
                         b_.Add(begin, b_.Mul(segment, schedule.segment)),
                         begin);
    Stmt* hi = b_.Select(
        schedule.on,
        b_.Binary(BinaryOpKind::kMin, end, b_.Add(lo, schedule.segment)), end);
    auto* checkpointed = b_.If(schedule.on);
    {
      auto inner = b_.EnterBlock(checkpointed->true_block());
      QD_RETURN_IF_ERROR(RecomputeSegment(loop, primal, lo, hi));
    }
    Map iteration = primal;
    Stmt* reverse = b_.RangeFor(lo, hi);
    auto inner = b_.EnterBlock(reverse->blocks()[0]);
    // Iterations run backwards: i = hi - 1 - (k - lo).
    index_override_[&loop] =
        b_.Sub(b_.Sub(hi, constant(1)), b_.Sub(b_.LoopIndex(reverse), lo));
    QD_RETURN_IF_ERROR(ReverseIteration(loop, iteration));
    index_override_.erase(&loop);
    return absl::OkStatus();
  }

  // Restores the carried state of iteration `lo` from its checkpoint and
  // replays iterations [lo, hi) as the forward replay did, pushing their
  // states (and stacked derivatives) onto the segment stacks.
  absl::Status RecomputeSegment(const ir::RangeForStmt& loop, Map& primal,
                                Stmt* lo, Stmt* hi) {
    const auto carried = OrderedCarried(loop);
    for (const Stmt* var : carried) {
      Stmt* checkpoints = CheckpointStack(loop, var, primal);
      b_.LocalStore(primal.at(var), b_.AdStackLoadTop(checkpoints));
      b_.AdStackPop(checkpoints);
    }
    const auto written = WrittenVariables(loop);
    auto saved = frozen_;
    for (const auto& [var, value] : snapshots_[&loop])
      frozen_[var] = value;
    Map replay = primal;
    Stmt* recompute = b_.RangeFor(lo, hi);
    auto scope = b_.EnterBlock(recompute->blocks()[0]);
    index_override_[&loop] = b_.LoopIndex(recompute);
    PushCarried(loop, replay);
    const Block& body = *loop.blocks()[0];
    absl::Status status;
    for (size_t i = 0; i < body.size() && status.ok(); ++i) {
      status = ReplayStmt(*body.at(i), replay, /*push=*/false);
      if (status.ok() && IsStackedDerivative(loop, *body.at(i), written))
        PushDerivative(loop, *body.at(i), replay);
    }
    index_override_.erase(&loop);
    frozen_ = std::move(saved);
    return status;
  }

  // ---- adstack ---------------------------------------------------------

  bool NeedsStack(const Stmt& loop) {
    return options_.adstack_enabled &&
           NeedsPerIterationPrimals(loop).has_value();
  }

  // The trip counter of a stacked while loop, declared at the task start.
  Stmt* Counter(const Stmt& loop) {
    auto it = counters_.find(&loop);
    if (it != counters_.end())
      return it->second;
    Stmt* slot =
        b_.InsertAt(task_->body(), 0,
                    std::make_unique<ir::AllocaStmt>(PrimitiveType::kI32));
    counters_[&loop] = slot;
    return slot;
  }

  // One stack per carried variable or stacked derivative of `loop`, declared
  // at the task start. Constant trip counts K size it exactly (K + 2);
  // otherwise the capacity is decided at launch.
  Stmt* Stack(const Stmt& loop, const Stmt* var, const Map& primal) {
    auto key = std::make_pair(&loop, var);
    auto it = stacks_.find(key);
    if (it != stacks_.end())
      return it->second;
    int64_t capacity = 0;
    if (const auto* range = ir::DynCast<ir::RangeForStmt>(&loop)) {
      const auto* begin = ir::DynCast<ir::ConstStmt>(primal.at(range->begin()));
      const auto* end = ir::DynCast<ir::ConstStmt>(primal.at(range->end()));
      if (begin && end) {
        capacity = std::max<int64_t>(
                       0, end->value().as_int() - begin->value().as_int()) +
                   2;
      }
    } else if (const auto* cells = ir::DynCast<ir::StructForStmt>(&loop)) {
      int64_t count = 1;
      for (int id = cells->snode_id(); id >= 0; id = snodes_.node(id).parent) {
        for (int64_t size : snodes_.node(id).sizes)
          count *= size;
      }
      capacity = count + 2;
    }
    auto stack = std::make_unique<ir::AdStackAllocaStmt>(var->type().element(),
                                                         capacity);
    stack->set_loc(loop.loc());
    if (capacity == 0) {
      stack->set_size_expr(CaptureStackCapacity(loop, snodes_));
    }
    if (options_.checkpointing && MaySegment(loop) &&
        (capacity > 0 || stack->size_expr() != nullptr)) {
      stack->set_checkpoint(Group(loop), ir::AdStackRole::kSegment);
    }
    Stmt* slot = b_.InsertAt(task_->body(), 0, std::move(stack));
    stacks_[key] = slot;
    return slot;
  }

  void PushCarried(const Stmt& loop, Map& primal) {
    for (const Stmt* var : OrderedCarried(loop)) {
      b_.AdStackPush(Stack(loop, var, primal), b_.LocalLoad(primal.at(var)));
    }
  }

  // With `stack_trig_derivatives`, an f32 sin or cos run once per
  // iteration of a stacked loop (directly in its body) stacks its
  // derivative, cos x or sin x, next to the value it computes: the backend
  // evaluates the pair for about the price of one, and the reverse sweep
  // reads the derivative back instead of evaluating it again. An input
  // that is the same in every iteration is not stacked once per iteration:
  // the sweep recomputes its derivative.
  bool IsStackedDerivative(
      const Stmt& loop, const Stmt& s,
      const absl::flat_hash_set<const Stmt*>& written) const {
    const auto* unary = ir::DynCast<ir::UnaryOpStmt>(&s);
    return options_.stack_trig_derivatives && unary != nullptr &&
           (unary->op() == UnaryOpKind::kSin ||
            unary->op() == UnaryOpKind::kCos) &&
           s.type().element() == PrimitiveType::kF32 &&
           !SameEveryIteration(loop, unary->input(), written);
  }

  void PushDerivative(const Stmt& loop, const Stmt& s, Map& primal) {
    const auto& unary = static_cast<const ir::UnaryOpStmt&>(s);
    const UnaryOpKind derivative =
        unary.op() == UnaryOpKind::kSin ? UnaryOpKind::kCos : UnaryOpKind::kSin;
    b_.AdStackPush(Stack(loop, &s, primal),
                   b_.Unary(derivative, primal.at(unary.input())));
    derivative_stacked_.insert(&s);
  }

  // The stacked derivative of `s` in the current reverse iteration, or null.
  Stmt* StackedDerivative(const Stmt& s) override {
    if (!derivative_stacked_.contains(&s))
      return nullptr;
    return b_.AdStackLoadTop(stacks_.at(std::make_pair(s.enclosing(), &s)));
  }

  // Carried variables in program order, for a deterministic stack layout.
  std::vector<const Stmt*> OrderedCarried(const Stmt& loop) {
    const auto carried = CarriedVariables(loop);
    std::vector<const Stmt*> ordered;
    for (const Block* block : loop.blocks()) {
      ir::WalkBlock(*block, [&](const Stmt* s) {
        if (ir::Isa<ir::LocalStoreStmt>(s) && carried.contains(s->operand(0)) &&
            std::find(ordered.begin(), ordered.end(), s->operand(0)) ==
                ordered.end()) {
          ordered.push_back(s->operand(0));
        }
      });
    }
    return ordered;
  }

  // ---- reverse sweep
  // ----------------------------------------------------------
  absl::Status Reverse(const Block& block, Map& primal) {
    for (size_t i = block.size(); i-- > 0;) {
      QD_RETURN_IF_ERROR(ReverseStmt(*block.at(i), primal));
    }
    return absl::OkStatus();
  }

  Stmt* Adjoint(const Stmt* s) {
    auto it = adjoints_.find(s);
    if (it != adjoints_.end())
      return it->second;
    Stmt* slot = EmptySumAtTaskStart(s->type().element());
    adjoints_[s] = slot;
    return slot;
  }

  // A local declared at the task start, holding EmptySumConstant(t).
  Stmt* EmptySumAtTaskStart(PrimitiveType t) {
    Block* start = task_->body();
    Stmt* slot = b_.InsertAt(start, 0, std::make_unique<ir::AllocaStmt>(t));
    Stmt* empty = b_.InsertAt(
        start, 1, std::make_unique<ir::ConstStmt>(EmptySumConstant(t)));
    b_.InsertAt(start, 2, std::make_unique<ir::LocalStoreStmt>(slot, empty));
    return slot;
  }

  ir::IRBuilder& builder() override { return b_; }
  Stmt* LoadAdjoint(const Stmt* s) override {
    return b_.LocalLoad(Adjoint(s));
  }

  void ResetAdjoint(const Stmt* s) override {
    if (adjoints_.contains(s))
      b_.LocalStore(adjoints_[s],
                    b_.Const(EmptySumConstant(s->type().element())));
  }

  // Adjoints and sums of adjoints start from -0.0, not +0.0: x + -0.0 is x
  // for every float x (+0.0 turns -0.0 into +0.0), so the first
  // accumulation into an adjoint is exact and folds away once the start
  // value is propagated, which takes an add off the sweep's chain of
  // dependent operations per adjoint.
  static ir::Constant EmptySumConstant(PrimitiveType t) {
    return ir::IsFloat(t) ? ir::Constant::Float(t, -0.0)
                          : ir::Constant::Int(t, 0);
  }

  // adjoint(target) += delta, for float values that carry an adjoint.
  void Accumulate(const Stmt* target, Stmt* delta) override {
    if (!IsFloatValue(target) || ir::Isa<ir::ConstStmt>(target) ||
        ir::Isa<ir::ArgLoadStmt>(target)) {
      return;
    }
    Stmt* slot = Adjoint(target);
    b_.LocalStore(slot, b_.Add(b_.LocalLoad(slot), delta));
  }

  Stmt* Const(PrimitiveType t, double value) {
    return b_.Const(ir::Constant::Float(t, value));
  }
  Stmt* Zero(PrimitiveType t) {
    return ir::IsFloat(t) ? Const(t, 0) : b_.Const(ir::Constant::Int(t, 0));
  }
  Stmt* Neg(Stmt* x) { return b_.Unary(UnaryOpKind::kNeg, x); }

  // The adjoint of a field or ndarray element; null for fields created
  // without needs_grad, which reverse mode treats as constants.
  absl::StatusOr<Stmt*> GradPtr(const Stmt& ptr, const Map& primal) {
    std::vector<Stmt*> indices;
    for (const Stmt* index : ptr.operands())
      indices.push_back(primal.at(index));
    if (const auto* field = ir::DynCast<ir::FieldPtrStmt>(&ptr)) {
      const ir::SNode& place = snodes_.node(field->snode_id());
      if (place.grad_snode < 0 && !place.needs_grad)
        return nullptr;
      if (place.grad_snode < 0) {
        return Error(
            ptr, absl::StrCat("field '", place.name,
                              "' needs a gradient, but its gradient field was "
                              "never placed (place its .grad, or call "
                              "qd.root.lazy_grad())"));
      }
      return static_cast<Stmt*>(
          b_.FieldPtr(place.grad_snode, place.dtype, indices));
    }
    const auto& array = static_cast<const ir::NdarrayPtrStmt&>(ptr);
    return static_cast<Stmt*>(
        b_.NdarrayPtr(adjoint_args_.at(array.arg()), indices));
  }

  absl::Status ReverseStmt(const Stmt& s, Map& primal) {
    b_.SetLocation(s.loc());
    auto p = [&](size_t i) { return primal.at(s.operand(i)); };
    switch (s.kind()) {
      case StmtKind::kGlobalLoad: {
        if (!IsFloatValue(&s))
          return absl::OkStatus();
        if (auto it = deferred_.find(&s); it != deferred_.end()) {
          b_.LocalStore(it->second,
                        b_.Add(b_.LocalLoad(it->second), LoadAdjoint(&s)));
          ResetAdjoint(&s);
          return absl::OkStatus();
        }
        QD_ASSIGN_OR_RETURN(Stmt * grad, GradPtr(*s.operand(0), primal));
        if (grad != nullptr)
          b_.Atomic(ir::AtomicOpKind::kAdd, grad, LoadAdjoint(&s));
        ResetAdjoint(&s);
        return absl::OkStatus();
      }
      case StmtKind::kGlobalStore:
      case StmtKind::kAtomicOp: {
        const Stmt* value = s.operand(1);
        if (!IsFloatValue(value))
          return absl::OkStatus();
        const auto* atomic = ir::DynCast<ir::AtomicOpStmt>(&s);
        if (atomic && atomic->op() != ir::AtomicOpKind::kAdd &&
            atomic->op() != ir::AtomicOpKind::kSub) {
          return Error(s, absl::StrCat(ir::OpName(atomic->op()),
                                       " is not differentiable"));
        }
        QD_ASSIGN_OR_RETURN(Stmt * grad, GradPtr(*s.operand(0), primal));
        if (grad == nullptr)
          return absl::OkStatus();
        Stmt* g = b_.GlobalLoad(grad);
        if (atomic && atomic->op() == ir::AtomicOpKind::kSub)
          g = Neg(g);
        Accumulate(value, g);
        // A plain store replaces the element: the value it held before
        // does not reach the loss, so its adjoint ends here.
        if (!atomic)
          b_.GlobalStore(grad, Zero(grad->type().element()));
        return absl::OkStatus();
      }
      case StmtKind::kLocalLoad:
        if (IsFloatValue(&s)) {
          Accumulate(s.operand(0), LoadAdjoint(&s));
          ResetAdjoint(&s);
        }
        return absl::OkStatus();
      case StmtKind::kLocalStore:
        if (IsFloatValue(s.operand(1))) {
          Accumulate(s.operand(1), LoadAdjoint(s.operand(0)));
          ResetAdjoint(s.operand(0));
        }
        return absl::OkStatus();
      case StmtKind::kUnaryOp:
        if (IsFloatValue(&s))
          ReverseUnary(*this, static_cast<const ir::UnaryOpStmt&>(s), p(0),
                       primal.at(&s));
        return absl::OkStatus();
      case StmtKind::kBinaryOp:
        if (IsFloatValue(&s)) {
          ReverseBinary(*this, static_cast<const ir::BinaryOpStmt&>(s), p(0), p(1),
                        primal.at(&s));
        }
        return absl::OkStatus();
      case StmtKind::kTernaryOp:
        if (IsFloatValue(&s)) {
          const PrimitiveType t = s.type().element();
          Stmt* g = LoadAdjoint(&s);
          Accumulate(s.operand(1), b_.Select(p(0), g, Zero(t)));
          Accumulate(s.operand(2), b_.Select(p(0), Zero(t), g));
          ResetAdjoint(&s);
        }
        return absl::OkStatus();
      case StmtKind::kIf: {
        const auto& branch = static_cast<const ir::IfStmt&>(s);
        auto* reverse = b_.If(p(0));
        {
          auto scope = b_.EnterBlock(reverse->true_block());
          QD_RETURN_IF_ERROR(Reverse(*branch.true_block(), primal));
        }
        auto scope = b_.EnterBlock(reverse->false_block());
        return Reverse(*branch.false_block(), primal);
      }
      case StmtKind::kRangeFor:
      case StmtKind::kStructFor:
      case StmtKind::kWhile:
        return ReverseLoop(s, primal);
      case StmtKind::kBreak:
      case StmtKind::kContinue:
        return Error(s,
                     "break and continue are not supported in kernels "
                     "differentiated with .grad() (without the adstack)");
      case StmtKind::kAdStackAlloca:
      case StmtKind::kAdStackPush:
      case StmtKind::kAdStackPop:
      case StmtKind::kAdStackLoadTop:
      case StmtKind::kAdStackLoadTopAdj:
      case StmtKind::kAdStackAccAdjoint:
        return Error(s,
                     "a kernel that already uses the adstack cannot be "
                     "differentiated again");
      default:
        return absl::OkStatus();  // constants, arguments, pointers, indices
    }
  }

  // The reversed loop, with the adjoints of loads whose element is the same
  // in every iteration summed in locals and added to the gradient once
  // after it: one atomic instead of one per iteration.
  absl::Status ReverseLoop(const Stmt& loop, Map& primal) {
    std::vector<const Stmt*> deferred = LoopInvariantLoads(loop);
    for (const Stmt* load : deferred) {
      Stmt* sum =
          b_.InsertAt(task_->body(), 0,
                      std::make_unique<ir::AllocaStmt>(load->type().element()));
      b_.LocalStore(sum, b_.Const(EmptySumConstant(load->type().element())));
      deferred_[load] = sum;
    }
    QD_RETURN_IF_ERROR(ReverseLoopIterations(loop, primal));
    for (const Stmt* load : deferred) {
      Stmt* sum = deferred_.at(load);
      deferred_.erase(load);
      QD_ASSIGN_OR_RETURN(Stmt * grad, GradPtr(*load->operand(0), primal));
      if (grad != nullptr)  // null: a field without gradient, a constant
        b_.Atomic(ir::AtomicOpKind::kAdd, grad, b_.LocalLoad(sum));
    }
    return absl::OkStatus();
  }

  absl::Status ReverseLoopIterations(const Stmt& loop, Map& primal) {
    const bool stacked = NeedsStack(loop);
    if (!stacked) {
      if (auto why = NeedsPerIterationPrimals(loop)) {
        return Error(
            loop,
            absl::StrCat(
                "reverse-mode autodiff of this loop needs the adstack: ", *why,
                ". Enable it with "
                "qd.init(ad_stack_experimental_enabled=True)"));
      }
    }
    if (stacked && ir::Isa<ir::WhileStmt>(&loop) &&
        !StartsWithConditionCheck(loop)) {
      return Error(loop,
                   "a differentiated while loop must be `while <condition>:` "
                   "without other breaks");
    }
    if (stacked && ir::Isa<ir::StructForStmt>(&loop)) {
      return Error(
          loop,
          "a struct-for loop that carries values needing the adstack is "
          "not supported; use range() over the field's shape");
    }
    if (ir::Isa<ir::StructForStmt>(&loop) && StoresToGlobals(loop)) {
      // Its reversal visits cells in forward order, so of several stores to
      // one element the wrong one would keep the gradient.
      return Error(loop,
                   "a struct-for loop nested in a differentiated kernel may "
                   "not store to fields or ndarrays; iterate with range() or "
                   "qd.ndrange() over the shape instead");
    }
    const bool is_while = ir::Isa<ir::WhileStmt>(&loop);
    const Block& body = *loop.blocks()[0];
    bool has_jump = false;
    const int check = is_while ? ConditionCheck(loop) : -1;
    ir::WalkBlock(body, [&](const Stmt* s) {
      // A stacked while loop's condition check ends in its own break.
      if (check >= 0 && (s == body.at(check) || s->IsInside(body.at(check))))
        return;
      if ((ir::Isa<ir::ContinueStmt>(s) || ir::Isa<ir::BreakStmt>(s)) &&
          JumpTarget(*s) == &loop) {
        has_jump = true;
      }
    });
    if (has_jump) {
      return Error(
          loop,
          "break or continue inside a differentiated loop is not supported");
    }
    Map iteration = primal;
    Stmt* reverse = nullptr;
    if (is_while) {
      // A stacked while loop: run its recorded trips backwards.
      reverse = b_.RangeFor(b_.ConstI32(0), b_.LocalLoad(Counter(loop)));
      auto scope = b_.EnterBlock(reverse->blocks()[0]);
      return ReverseIteration(loop, iteration, ConditionCheck(loop) + 1);
    }
    if (const auto* range = ir::DynCast<ir::RangeForStmt>(&loop);
        range != nullptr && stacked && Checkpointable(loop, primal)) {
      return ReverseInSegments(*range, primal);
    }
    if (const auto* range = ir::DynCast<ir::RangeForStmt>(&loop)) {
      Stmt* begin = primal.at(range->begin());
      Stmt* end = primal.at(range->end());
      reverse = b_.RangeFor(begin, end);
      auto scope = b_.EnterBlock(reverse->blocks()[0]);
      // Iterations run backwards: i = end - 1 - (k - begin).
      const PrimitiveType t = range->begin()->type().element();
      Stmt* k = b_.LoopIndex(reverse);
      Stmt* one = b_.Const(ir::Constant::Int(t, 1));
      index_override_[&loop] = b_.Sub(b_.Sub(end, one), b_.Sub(k, begin));
      QD_RETURN_IF_ERROR(ReverseIteration(loop, iteration));
      index_override_.erase(&loop);
      return absl::OkStatus();
    }
    reverse =
        b_.StructFor(static_cast<const ir::StructForStmt&>(loop).snode_id());
    iteration[&loop] = reverse;
    auto scope = b_.EnterBlock(reverse->blocks()[0]);
    return ReverseIteration(loop, iteration);
  }

  // One iteration of a reversed loop: restore the state it started from
  // (stacked loops), recompute its primal values, then sweep its body
  // backwards, from statement `first` on.
  absl::Status ReverseIteration(const Stmt& loop, Map& iteration,
                                size_t first = 0) {
    const bool stacked = NeedsStack(loop);
    std::vector<const Stmt*> carried;
    if (stacked) {
      carried = OrderedCarried(loop);
      for (const Stmt* var : carried) {
        b_.LocalStore(iteration.at(var),
                      b_.AdStackLoadTop(Stack(loop, var, iteration)));
      }
    }
    auto saved = frozen_;
    for (const auto& [var, value] : snapshots_[&loop])
      frozen_[var] = value;
    const Block& body = *loop.blocks()[0];
    absl::Status status;
    // A while loop's condition values may be used later in its body: replay
    // them (they are pure), but not the check that breaks.
    for (size_t i = 0; i + 1 < first && status.ok(); ++i) {
      status = ReplayStmt(*body.at(i), iteration, /*push=*/false);
    }
    for (size_t i = first; i < body.size() && status.ok(); ++i) {
      status = ReplayStmt(*body.at(i), iteration, /*push=*/true);
    }
    for (size_t i = body.size(); status.ok() && i-- > first;) {
      status = ReverseStmt(*body.at(i), iteration);
    }
    frozen_ = std::move(saved);
    if (stacked) {
      for (const Stmt* var : carried)
        b_.AdStackPop(Stack(loop, var, iteration));
      for (size_t i = first; i < body.size(); ++i) {
        if (derivative_stacked_.contains(body.at(i)))
          b_.AdStackPop(Stack(loop, body.at(i), iteration));
      }
    }
    return status;
  }

  ir::Kernel& kernel_;
  const ir::SNodeTree& snodes_;
  const ReverseModeOptions& options_;
  const absl::flat_hash_map<int, int>& adjoint_args_;
  ir::OffloadedTaskStmt* task_;
  IRBuilder b_;
  absl::flat_hash_map<const Stmt*, Stmt*> adjoints_;
  absl::flat_hash_map<const Stmt*, Map> snapshots_;
  absl::flat_hash_map<std::pair<const Stmt*, const Stmt*>, Stmt*> stacks_;
  absl::flat_hash_map<std::pair<const Stmt*, const Stmt*>, Stmt*>
      checkpoint_stacks_;
  absl::flat_hash_map<const Stmt*, int> groups_;
  absl::flat_hash_map<const Stmt*, Stmt*> counters_;
  // sin and cos statements whose derivatives the forward replay stacks.
  absl::flat_hash_set<const Stmt*> derivative_stacked_;
  Map frozen_;
  // Loads whose adjoints are summed in a local until their loop's reversal
  // ends (see ReverseLoop).
  Map deferred_;
  Map index_override_;
};

absl::Status CheckTaskJumps(const ir::Kernel& kernel,
                            const ir::OffloadedTaskStmt& task) {
  absl::Status status;
  ir::WalkBlock(*task.body(), [&](const Stmt* s) {
    if (status.ok() &&
        (ir::Isa<ir::ContinueStmt>(s) || ir::Isa<ir::BreakStmt>(s)) &&
        JumpTarget(*s) == &task) {
      status = MakeError(
          ErrorKind::kCompilation, s->loc(),
          absl::StrCat("in kernel '", kernel.name(),
                       "': continue in the outermost loop is not "
                       "supported in kernels differentiated with .grad()"));
    }
  });
  return status;
}

}  // namespace

absl::Status MakeGradKernel(ir::Kernel& kernel, const ir::SNodeTree& snodes,
                            const ReverseModeOptions& options) {
  StructureContinues(kernel);
  QD_RETURN_IF_ERROR(CheckAtomicResults(kernel));
  QD_RETURN_IF_ERROR(CheckGlobalDataAccessRule(kernel, snodes));
  const absl::flat_hash_map<int, int> adjoint_args =
      AddCompanionNdarrayParams(kernel, "_grad");
  // The forward tasks stay alive until every gradient task is built.
  std::vector<std::unique_ptr<Stmt>> forward = kernel.body()->TakeAll();
  for (size_t t = forward.size(); t-- > 0;) {
    const auto& task = static_cast<const ir::OffloadedTaskStmt&>(*forward[t]);
    QD_RETURN_IF_ERROR(CheckTaskJumps(kernel, task));
    auto grad = std::make_unique<ir::OffloadedTaskStmt>(task.task_kind(),
                                                        task.snode_id());
    grad->set_loc(task.loc());
    Map bounds;
    for (const auto& stmt : *task.prologue()) {
      grad->prologue()->Append(ir::CloneStmt(*stmt, &bounds));
    }
    if (task.num_operands() == 2) {
      grad->SetBounds(bounds.at(task.begin()), bounds.at(task.end()));
    }
    ir::OffloadedTaskStmt* grad_task = grad.get();
    kernel.body()->Append(std::move(grad));
    GradTaskBuilder builder(kernel, snodes, options, adjoint_args, grad_task);
    QD_RETURN_IF_ERROR(builder.Build(task));
  }
  QD_RETURN_IF_ERROR(TypeCheck(kernel));
  BackupOutOfScopeValues(kernel);
  return absl::OkStatus();
}

}  // namespace quadrants::transforms::autodiff
