// Structured control flow of a shader: selections, counted and while
// loops (unrolled against lavapipe's limit on back edges), continue
// flags, and the cells of struct_for loops.
#include "quadrants/codegen/spirv/shader_emitter_internal.h"

namespace quadrants::codegen::spirv::shader {

void ShaderEmitter::If(Id cond, const std::function<void()>& then) {
  Id then_label = b_.NewId(), merge = b_.NewId();
  b_.OpVoid(spv::OpSelectionMerge, {merge, spv::SelectionControlMaskNone});
  b_.BranchConditional(cond, then_label, merge);
  b_.Label(then_label);
  then();
  if (!b_.terminated())
    b_.Branch(merge);
  b_.Label(merge);
}

ShaderEmitter::LoopLabels ShaderEmitter::OpenLoop() {
  Id header = b_.NewId(), body = b_.NewId(), latch = b_.NewId(),
     merge = b_.NewId();
  b_.Branch(header);
  b_.Label(header);
  b_.OpVoid(spv::OpLoopMerge, {merge, latch, spv::LoopControlMaskNone});
  b_.Branch(body);
  b_.Label(body);
  return {header, body, latch, merge};
}

void ShaderEmitter::RetryUntil(const std::function<Id()>& attempt) {
  // The loop leaves from its header on a flag carried around it, so what
  // the attempt stores in variables reaches the code after the loop
  // through the header's phis. Lavapipe computes the loop body's values
  // for every lane, also those that already left; a body value used after
  // the loop directly (as a bottom-tested loop leaves it) would hold
  // another lane's later attempt, such as an atomic's old value.
  Id done_var = b_.LocalVariable(Bool());
  b_.OpVoid(spv::OpStore, {done_var, b_.ConstBool(false)});
  Id header = b_.NewId(), body = b_.NewId(), latch = b_.NewId(),
     merge = b_.NewId();
  b_.Branch(header);
  b_.Label(header);
  Id done = b_.Op(spv::OpLoad, Bool(), {done_var});
  b_.OpVoid(spv::OpLoopMerge, {merge, latch, spv::LoopControlMaskNone});
  b_.BranchConditional(done, merge, body);
  b_.Label(body);
  b_.OpVoid(spv::OpStore, {done_var, attempt()});
  b_.Branch(latch);
  b_.Label(latch);
  b_.Branch(header);
  b_.Label(merge);
}

absl::Status ShaderEmitter::CountedLoop(
    Id begin, Id end, Id step, const std::function<absl::Status(Id)>& body,
    const Stmt* loop) {
  const Id i64 = I64();
  const int unroll = loop == nullptr ? 1 : UnrollFactor(loop);
  Id flag = 0;
  if (unroll > 1 && HasFlaggedContinueTarget(loop))
    flag = b_.LocalVariable(Bool());
  Id counter = b_.LocalVariable(i64);
  b_.OpVoid(spv::OpStore, {counter, begin});
  Id header = b_.NewId(), body_label = b_.NewId(), latch = b_.NewId(),
     merge = b_.NewId();
  b_.Branch(header);
  b_.Label(header);
  Id i = b_.Op(spv::OpLoad, i64, {counter});
  Id more = b_.Op(spv::OpSLessThan, Bool(), {i, end});
  b_.OpVoid(spv::OpLoopMerge, {merge, latch, spv::LoopControlMaskNone});
  b_.BranchConditional(more, body_label, merge);
  b_.Label(body_label);
  loops_.push_back({latch, merge, loop, flag});
  Id index = i;
  for (int copy = 0; copy < unroll; ++copy) {
    if (copy > 0) {
      // The next copy runs the next iteration, if there is one.
      index = b_.Op(spv::OpIAdd, i64, {index, step});
      Id next = b_.NewId();
      Id in_range = b_.Op(spv::OpSLessThan, Bool(), {index, end});
      b_.OpVoid(spv::OpSelectionMerge, {next, spv::SelectionControlMaskNone});
      b_.BranchConditional(in_range, next, merge);
      b_.Label(next);
    }
    if (flag != 0)
      b_.OpVoid(spv::OpStore, {flag, b_.ConstBool(false)});
    absl::Status status = body(index);
    if (!status.ok()) {
      loops_.pop_back();
      return status;
    }
    if (b_.terminated())
      break;  // the copy always leaves the loop: the rest is dead
  }
  loops_.pop_back();
  if (!b_.terminated())
    b_.Branch(latch);
  b_.Label(latch);
  Id current = b_.Op(spv::OpLoad, i64, {counter});
  Id advance =
      unroll == 1 ? step : b_.Op(spv::OpIMul, i64, {step, b_.ConstI64(unroll)});
  b_.OpVoid(spv::OpStore,
            {counter, b_.Op(spv::OpIAdd, i64, {current, advance})});
  b_.Branch(header);
  b_.Label(merge);
  return absl::OkStatus();
}

int64_t ShaderEmitter::Size(const ir::Block& block) {
  int64_t total = 0;
  for (const auto& s : block)
    total += Size(s.get());
  return total;
}

int64_t ShaderEmitter::Size(const Stmt* s) {
  auto it = sizes_.find(s);
  if (it != sizes_.end())
    return it->second;
  int64_t size = 1;
  const bool loop = ir::Isa<ir::RangeForStmt>(s) ||
                    ir::Isa<ir::StructForStmt>(s) || ir::Isa<ir::WhileStmt>(s);
  for (ir::Block* block : s->blocks()) {
    const int64_t body = Size(*block);
    size += loop ? body * UnrollFactor(s) : body;
  }
  // Math calls, atomics and prints expand to many instructions.
  if (ir::Isa<ir::AtomicOpStmt>(s) || ir::Isa<ir::DebugPrintStmt>(s) ||
      (ir::Isa<ir::UnaryOpStmt>(s) &&
       ir::IsFloatMath(static_cast<const ir::UnaryOpStmt*>(s)->op()))) {
    size = 4;
  }
  sizes_[s] = size;
  return size;
}

int ShaderEmitter::UnrollFactor(const Stmt* loop) {
  // Statements after unrolling: short constant loops unroll completely,
  // others by up to 16.
  constexpr int64_t kFullBudget = 2048;
  constexpr int64_t kBudget = 1024;
  int64_t body = 0;
  for (ir::Block* block : loop->blocks())
    body += Size(*block);
  body = std::max<int64_t>(body, 1);
  int64_t trip = -1;
  if (const auto* range = ir::DynCast<ir::RangeForStmt>(loop)) {
    const auto* b = ir::DynCast<ir::ConstStmt>(range->begin());
    const auto* e = ir::DynCast<ir::ConstStmt>(range->end());
    if (b != nullptr && e != nullptr && !b->value().is_float() &&
        !e->value().is_float()) {
      trip =
          std::max<int64_t>(0, static_cast<int64_t>(e->value().as_uint()) -
                                   static_cast<int64_t>(b->value().as_uint()));
      if (ir::IsSigned(e->value().type()) &&
          static_cast<int64_t>(e->value().as_uint()) < 0) {
        trip = 0;
      }
    }
  }
  if (const auto* field_loop = ir::DynCast<ir::StructForStmt>(loop)) {
    trip = 1;
    for (const auto& axis : snodes_.CellAxes(field_loop->snode_id()))
      trip *= axis.second;
  }
  if (trip >= 0 && trip <= 256 && trip * body <= kFullBudget)
    return static_cast<int>(std::max<int64_t>(trip, 1));
  for (int unroll : {16, 8, 4, 2}) {
    if (unroll * body <= kBudget)
      return unroll;
  }
  return 1;
}

bool ShaderEmitter::HasFlaggedContinueTarget(const Stmt* loop) {
  if (!continue_targets_computed_) {
    continue_targets_computed_ = true;
    ir::WalkKernel(kernel_, [&](const Stmt* s) {
      if (!ir::Isa<ir::ContinueStmt>(s))
        return;
      for (const Stmt* up = s->enclosing(); up != nullptr;
           up = up->enclosing()) {
        if (ir::Isa<ir::RangeForStmt>(up) || ir::Isa<ir::StructForStmt>(up) ||
            ir::Isa<ir::WhileStmt>(up) || ir::Isa<ir::OffloadedTaskStmt>(up)) {
          continue_targets_[s] = up;
          break;
        }
      }
    });
  }
  for (const auto& [cont, target] : continue_targets_) {
    if (target == loop)
      return true;
  }
  return false;
}

bool ShaderEmitter::HasFlaggedContinue(const Stmt* s) {
  if (loops_.empty() || loops_.back().continue_flag == 0)
    return false;
  const Stmt* loop = loops_.back().loop;
  bool found = false;
  for (ir::Block* block : s->blocks()) {
    ir::WalkBlock(*block, [&](const Stmt* inner) {
      if (ir::Isa<ir::ContinueStmt>(inner)) {
        auto it = continue_targets_.find(inner);
        found = found || (it != continue_targets_.end() && it->second == loop);
      }
    });
  }
  return found;
}

std::vector<Id> ShaderEmitter::DecomposeCell(int snode, Id linear) {
  auto axes = snodes_.CellAxes(snode);
  const int num_axes = axes.empty() ? 0 : axes.back().first + 1;
  std::vector<Id> indices(num_axes, b_.ConstI32(0));
  const Id i64 = I64();
  // Row-major over the axes in order: the last axis varies fastest.
  for (int k = static_cast<int>(axes.size()) - 1; k >= 0; --k) {
    Id size = b_.ConstI64(axes[k].second);
    indices[axes[k].first] = b_.Op(spv::OpSConvert, I32(),
                                   {b_.Op(spv::OpSRem, i64, {linear, size})});
    linear = b_.Op(spv::OpSDiv, i64, {linear, size});
  }
  return indices;
}

absl::Status ShaderEmitter::EmitRangeFor(const ir::RangeForStmt& s) {
  const PrimitiveType t = s.begin()->type().element();
  return CountedLoop(
      ToI64(Get(s.begin()), t), ToI64(Get(s.end()), t), b_.ConstI64(1),
      [&](Id i) {
        loop_indices_[&s] = {Cast(i, PrimitiveType::kI64, t)};
        return EmitBlock(*s.body());
      },
      &s);
}

absl::Status ShaderEmitter::EmitStructFor(const ir::StructForStmt& s) {
  int64_t cells = 1;
  for (const auto& axis : snodes_.CellAxes(s.snode_id()))
    cells *= axis.second;
  return CountedLoop(
      b_.ConstI64(0), b_.ConstI64(cells), b_.ConstI64(1),
      [&](Id i) {
        loop_indices_[&s] = DecomposeCell(s.snode_id(), i);
        return EmitBlock(*s.body());
      },
      &s);
}

absl::Status ShaderEmitter::EmitWhile(const ir::WhileStmt& s) {
  const int unroll = UnrollFactor(&s);
  Id flag = 0;
  if (unroll > 1 && HasFlaggedContinueTarget(&s))
    flag = b_.LocalVariable(Bool());
  const LoopLabels loop = OpenLoop();
  loops_.push_back({loop.latch, loop.merge, &s, flag});
  // Each copy runs one iteration; the body's own break ends the loop.
  for (int copy = 0; copy < unroll && !b_.terminated(); ++copy) {
    if (flag != 0)
      b_.OpVoid(spv::OpStore, {flag, b_.ConstBool(false)});
    absl::Status status = EmitBlock(*s.body());
    if (!status.ok()) {
      loops_.pop_back();
      return status;
    }
  }
  loops_.pop_back();
  if (!b_.terminated())
    b_.Branch(loop.latch);
  b_.Label(loop.latch);
  b_.Branch(loop.header);
  b_.Label(loop.merge);
  return absl::OkStatus();
}

absl::Status ShaderEmitter::EmitIf(const ir::IfStmt& s) {
  Id cond = AsBool(Get(s.cond()), s.cond()->type().element());
  if (std::find(true_conditions_.begin(), true_conditions_.end(), cond) !=
      true_conditions_.end()) {
    return EmitBlock(*s.true_block());
  }
  Id then_label = b_.NewId(), merge = b_.NewId();
  const bool has_else = !s.false_block()->empty();
  Id else_label = has_else ? b_.NewId() : merge;
  b_.OpVoid(spv::OpSelectionMerge, {merge, spv::SelectionControlMaskNone});
  b_.BranchConditional(cond, then_label, else_label);
  b_.Label(then_label);
  true_conditions_.push_back(cond);
  absl::Status then_status = EmitBlock(*s.true_block());
  true_conditions_.pop_back();
  if (!then_status.ok())
    return then_status;
  if (!b_.terminated())
    b_.Branch(merge);
  if (has_else) {
    b_.Label(else_label);
    if (absl::Status st = EmitBlock(*s.false_block()); !st.ok())
      return st;
    if (!b_.terminated())
      b_.Branch(merge);
  }
  b_.Label(merge);
  return absl::OkStatus();
}

}  // namespace quadrants::codegen::spirv::shader
