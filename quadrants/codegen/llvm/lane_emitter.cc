#include "quadrants/codegen/llvm/lane_emitter.h"

#include "quadrants/adstack/stack_spec.h"
#include "quadrants/codegen/llvm/lane_emitter_internal.h"
#include "quadrants/ir/uses.h"

namespace quadrants::codegen {
namespace lanes {

int LaneEmitter::LinearStructAxis(const ir::SNodeTree& snodes,
                                  const ir::OffloadedTaskStmt& task) {
  if (task.task_kind() != ir::TaskKind::kStructFor)
    return -1;
  const auto axes = snodes.CellAxes(task.snode_id());
  return axes.size() == 1 ? axes[0].first : -1;
}

llvm::Value* LaneEmitter::Call(const std::string& name, llvm::Type* result,
                               std::vector<llvm::Value*> args) {
  return CallRuntime(b_, name, result, std::move(args));
}

llvm::AllocaInst* LaneEmitter::EntryAlloca(llvm::Type* type, const char* name) {
  llvm::IRBuilder<> entry(entry_, entry_->begin());
  return entry.CreateAlloca(type, nullptr, name);
}

llvm::Value* LaneEmitter::LaneIds() {
  std::vector<llvm::Constant*> ids;
  for (int l = 0; l < lanes_; ++l)
    ids.push_back(b_.getInt64(l));
  return llvm::ConstantVector::get(ids);
}

llvm::Value* LaneEmitter::Live(llvm::Value* mask) {
  if (loops_.empty() || !loops_.back().divergent)
    return mask;
  llvm::Type* type = mask->getType();
  const LoopState& loop = loops_.back();
  if (loop.alive != nullptr)
    mask = b_.CreateAnd(mask, b_.CreateLoad(type, loop.alive));
  return b_.CreateAnd(mask, b_.CreateNot(b_.CreateLoad(type, loop.skip)));
}

void LaneEmitter::StartDeadBlock() {
  b_.SetInsertPoint(
      llvm::BasicBlock::Create(context_, "unreachable", function_));
}

absl::Status LaneEmitter::EmitRegion(const ir::Block& block,
                                     llvm::BasicBlock* end) {
  region_ends_.push_back(end);
  absl::Status status = EmitBlock(block);
  region_ends_.pop_back();
  return status;
}

absl::Status LaneEmitter::EmitUnder(llvm::Value* mask, const ir::Block& block) {
  if (block.size() == 0)
    return absl::OkStatus();
  auto* body = llvm::BasicBlock::Create(context_, "lanes.on", function_);
  auto* end = llvm::BasicBlock::Create(context_, "lanes.end", function_);
  b_.CreateCondBr(Any(mask), body, end);
  b_.SetInsertPoint(body);
  mask_ = mask;
  QD_RETURN_IF_ERROR(EmitRegion(block, end));
  b_.CreateBr(end);
  b_.SetInsertPoint(end);
  return absl::OkStatus();
}

std::vector<llvm::Value*> LaneEmitter::DecomposeCell(int snode,
                                                     llvm::Value* linear) {
  return ops_.DecomposeCell(snodes_.CellAxes(snode), linear);
}

bool LaneEmitter::IsUsed(const Stmt* s) {
  if (!used_computed_) {
    used_ = ir::UsedValues(kernel_);
    used_computed_ = true;
  }
  return used_.contains(s);
}

absl::Status LaneEmitter::Emit(const std::string& name, int vector_bits) {
  llvm::Type* i64 = b_.getInt64Ty();
  auto* type = llvm::FunctionType::get(
      b_.getVoidTy(), {b_.getPtrTy(), i64, i64, b_.getInt32Ty()}, false);
  function_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                     name, module_);
  // Whole-register vectors: without these x86 splits 512-bit operations.
  const std::string bits = absl::StrCat(vector_bits);
  function_->addFnAttr("min-legal-vector-width", bits);
  function_->addFnAttr("prefer-vector-width", bits);
  ctx_ = function_->getArg(0);
  entry_ = llvm::BasicBlock::Create(context_, "entry", function_);
  b_.SetInsertPoint(entry_);
  adjoint_stacks_ = StacksWithAdjoints(kernel_);

  llvm::Value* begin = function_->getArg(1);
  llvm::Value* end = function_->getArg(2);
  llvm::AllocaInst* counter = EntryAlloca(i64, "step");
  b_.CreateStore(begin, counter);
  auto* header = llvm::BasicBlock::Create(context_, "step.header", function_);
  auto* body = llvm::BasicBlock::Create(context_, "step.body", function_);
  auto* latch = llvm::BasicBlock::Create(context_, "step.latch", function_);
  auto* exit = llvm::BasicBlock::Create(context_, "step.exit", function_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::Value* base = b_.CreateLoad(i64, counter);
  b_.CreateCondBr(b_.CreateICmpSLT(base, end), body, exit);
  b_.SetInsertPoint(body);
  llvm::Value* index = b_.CreateAdd(Splat(base), LaneIds());
  mask_ = b_.CreateICmpSLT(index, Splat(end));
  LoopState loop{forms_.HasDivergentExits(&task_), nullptr, nullptr, latch,
                 nullptr};
  if (loop.divergent) {
    loop.skip = EntryAlloca(mask_->getType(), "skip");
    b_.CreateStore(NoLanes(), loop.skip);
  }
  loops_.push_back(loop);
  if (task_.task_kind() == ir::TaskKind::kRangeFor) {
    const PrimitiveType t = task_.begin()->type().element();
    loop_indices_[&task_] = {
        b_.CreateIntCast(index, ops_.RegisterType(t), ir::IsSigned(t))};
  } else {
    loop_indices_[&task_] = DecomposeCell(task_.snode_id(), index);
  }
  SeedRandom(index);
  QD_RETURN_IF_ERROR(EmitRegion(*task_.body(), latch));
  loops_.pop_back();
  b_.CreateBr(latch);
  b_.SetInsertPoint(latch);
  b_.CreateStore(b_.CreateAdd(base, b_.getInt64(lanes_)), counter);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  FlushDeferredAtomics();
  b_.CreateRetVoid();
  return absl::OkStatus();
}

absl::Status LaneEmitter::EmitBlock(const ir::Block& block) {
  for (const auto& stmt : block)
    QD_RETURN_IF_ERROR(EmitStmt(*stmt));
  return absl::OkStatus();
}

llvm::Value* LaneEmitter::EmitArgLoad(const ir::ArgLoadStmt& s) {
  llvm::Value* slot =
      Call("qd_arg", b_.getInt64Ty(), {ctx_, b_.getInt32(s.arg())});
  return Splat(ops_.DecodeArgument(slot, s.type().element()));
}

llvm::Value* LaneEmitter::EmitNdarrayPtr(const ir::NdarrayPtrStmt& s) {
  const ir::KernelParam& param = kernel_.params()[s.arg()];
  llvm::Value* data =
      Call("qd_ndarray_data", b_.getPtrTy(), {ctx_, b_.getInt32(s.arg())});
  llvm::Value* linear = Splat(b_.getInt64(0));
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    llvm::Value* extent = Call("qd_ndarray_shape", b_.getInt64Ty(),
                               {ctx_, b_.getInt32(s.arg()), b_.getInt32(axis)});
    llvm::Value* index =
        ops_.ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    linear = b_.CreateAdd(b_.CreateMul(linear, Splat(extent)), index);
  }
  return b_.CreateGEP(Storage(param.dtype), data, linear);
}

absl::StatusOr<llvm::Value*> LaneEmitter::EmitFieldPtr(
    const ir::FieldPtrStmt& s) {
  absl::StatusOr<ir::PlaceLayout> layout = snodes_.Layout(s.snode_id());
  if (!layout.ok())
    return layout.status();
  llvm::Value* offset = Splat(b_.getInt64(layout->offset));
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    llvm::Value* index =
        ops_.ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    for (const ir::AxisDigit& d : layout->digits[axis]) {
      llvm::Value* digit = index;
      if (d.divisor > 1)
        digit = b_.CreateSDiv(digit, Splat(b_.getInt64(d.divisor)));
      if (d.modulus > 0)
        digit = b_.CreateSRem(digit, Splat(b_.getInt64(d.modulus)));
      offset = b_.CreateAdd(
          offset, b_.CreateMul(digit, Splat(b_.getInt64(d.stride))));
    }
  }
  llvm::Value* root = Call("qd_root", b_.getPtrTy(), {ctx_});
  return b_.CreateGEP(b_.getInt8Ty(), root, offset);
}

LaneEmitter::Access LaneEmitter::AccessOf(const Stmt* ptr) {
  if (forms_.Uniform(ptr))
    return Access::kUniform;
  if (!forms_.LastIndexLinear(ptr))
    return Access::kScattered;
  if (const auto* field = ir::DynCast<ir::FieldPtrStmt>(ptr)) {
    absl::StatusOr<ir::PlaceLayout> layout = snodes_.Layout(field->snode_id());
    const PrimitiveType t = ptr->type().element();
    const int64_t bytes = adstack::ElementBytes(t);
    if (!layout.ok() || !layout->affine() || layout->axis_stride.empty() ||
        layout->axis_stride.back() != bytes) {
      return Access::kScattered;
    }
  }
  return Access::kContiguous;
}

llvm::Value* LaneEmitter::EmitGlobalLoad(const Stmt& s) {
  const PrimitiveType t = s.type().element();
  llvm::Type* storage = Storage(t);
  llvm::Value* ptrs = Get(s.operand(0));
  const llvm::Align align(storage->getPrimitiveSizeInBits() / 8);
  llvm::Instruction* load = nullptr;
  llvm::Value* v = nullptr;
  switch (AccessOf(s.operand(0))) {
    case Access::kUniform:
      // Some lane is on, and all would read this one address.
      load = b_.CreateLoad(storage, Lane0(ptrs));
      v = Splat(load);
      break;
    case Access::kContiguous:
      v = load = b_.CreateMaskedLoad(ops_.Widen(storage), Lane0(ptrs), align,
                                     mask_, Zeros(storage));
      break;
    case Access::kScattered:
      v = load = b_.CreateMaskedGather(ops_.Widen(storage), ptrs, align, mask_,
                                       Zeros(storage));
      break;
  }
  scopes_.MarkData(load);
  if (t == PrimitiveType::kU1)
    v = b_.CreateICmpNE(v, Splat(b_.getInt8(0)));
  return v;
}

void LaneEmitter::EmitGlobalStore(const Stmt& s) {
  const PrimitiveType t = s.operand(1)->type().element();
  llvm::Value* v = Get(s.operand(1));
  if (t == PrimitiveType::kU1)
    v = b_.CreateZExt(v, ops_.Widen(b_.getInt8Ty()));
  llvm::Value* ptrs = Get(s.operand(0));
  const llvm::Align align(Storage(t)->getPrimitiveSizeInBits() / 8);
  if (AccessOf(s.operand(0)) == Access::kContiguous) {
    scopes_.MarkData(b_.CreateMaskedStore(v, Lane0(ptrs), align, mask_));
  } else {
    // One address for all lanes: the last active lane's value lands, as
    // some iteration's would.
    scopes_.MarkData(b_.CreateMaskedScatter(v, ptrs, align, mask_));
  }
}

void LaneEmitter::EmitLocalStore(const Stmt& s) {
  llvm::Value* slot = Get(s.operand(0));
  llvm::Value* v = Get(s.operand(1));
  if (forms_.UnderVaryingControl(&s)) {
    // Idle lanes keep their values.
    v = b_.CreateSelect(mask_, v, b_.CreateLoad(v->getType(), slot));
  }
  b_.CreateStore(v, slot);
}

absl::Status LaneEmitter::EmitIf(const ir::IfStmt& s) {
  llvm::Value* cond = ops_.AsBool(Get(s.cond()), s.cond()->type().element());
  llvm::Value* entry = mask_;
  if (forms_.Uniform(s.cond())) {
    auto* then_bb = llvm::BasicBlock::Create(context_, "if.then", function_);
    auto* else_bb = llvm::BasicBlock::Create(context_, "if.else", function_);
    auto* merge = llvm::BasicBlock::Create(context_, "if.end", function_);
    b_.CreateCondBr(Lane0(cond), then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    QD_RETURN_IF_ERROR(EmitRegion(*s.true_block(), merge));
    b_.CreateBr(merge);
    b_.SetInsertPoint(else_bb);
    mask_ = entry;
    QD_RETURN_IF_ERROR(EmitRegion(*s.false_block(), merge));
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
  } else {
    QD_RETURN_IF_ERROR(EmitUnder(b_.CreateAnd(entry, cond), *s.true_block()));
    QD_RETURN_IF_ERROR(EmitUnder(b_.CreateAnd(Live(entry), b_.CreateNot(cond)),
                                 *s.false_block()));
  }
  mask_ = Live(entry);
  if (!loops_.empty() && loops_.back().divergent) {
    // A break or continue in the branches may have taken every lane: the
    // rest of the region is for lanes still on (and must not read memory
    // for none).
    auto* rest = llvm::BasicBlock::Create(context_, "lanes.rest", function_);
    b_.CreateCondBr(Any(mask_), rest, region_ends_.back());
    b_.SetInsertPoint(rest);
  }
  return absl::OkStatus();
}

absl::Status LaneEmitter::EmitLoop(
    const Stmt& loop, llvm::Value* begin, llvm::Value* end, bool uniform_bounds,
    const std::function<std::vector<llvm::Value*>(llvm::Value*)>& indices,
    const ir::Block& body) {
  llvm::Value* entry = mask_;
  llvm::Type* mask_type = entry->getType();
  LoopState state{forms_.HasDivergentExits(&loop), nullptr, nullptr, nullptr,
                  nullptr};
  auto* header = llvm::BasicBlock::Create(context_, "loop.header", function_);
  auto* body_bb = llvm::BasicBlock::Create(context_, "loop.body", function_);
  auto* latch = llvm::BasicBlock::Create(context_, "loop.latch", function_);
  auto* exit = llvm::BasicBlock::Create(context_, "loop.exit", function_);
  state.continue_to = latch;
  state.break_to = exit;
  if (state.divergent) {
    state.alive = EntryAlloca(mask_type, "alive");
    state.skip = EntryAlloca(mask_type, "skip");
    b_.CreateStore(entry, state.alive);
  }
  // A uniform counter is scalar; a per-lane one (varying begin or end) is
  // a vector whose finished lanes drop out of the mask.
  llvm::AllocaInst* counter = EntryAlloca(begin->getType(), "i");
  b_.CreateStore(begin, counter);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::Value* i = b_.CreateLoad(begin->getType(), counter);
  llvm::Value* active = entry;
  llvm::Value* go = nullptr;
  if (uniform_bounds) {
    go = b_.CreateICmpSLT(i, end);
    if (state.divergent) {
      active = b_.CreateLoad(mask_type, state.alive);
      go = b_.CreateAnd(go, Any(active));
    }
  } else {
    active = b_.CreateAnd(entry, b_.CreateICmpSLT(i, end));
    if (state.divergent)
      active = b_.CreateAnd(active, b_.CreateLoad(mask_type, state.alive));
    go = Any(active);
  }
  b_.CreateCondBr(go, body_bb, exit);
  b_.SetInsertPoint(body_bb);
  if (state.divergent)
    b_.CreateStore(NoLanes(), state.skip);
  mask_ = active;
  loop_indices_[&loop] = indices(uniform_bounds ? Splat(i) : i);
  loops_.push_back(state);
  absl::Status status = EmitRegion(body, latch);
  loops_.pop_back();
  QD_RETURN_IF_ERROR(status);
  b_.CreateBr(latch);
  b_.SetInsertPoint(latch);
  llvm::Value* current = b_.CreateLoad(begin->getType(), counter);
  llvm::Value* one = llvm::ConstantInt::get(begin->getType(), 1);
  b_.CreateStore(b_.CreateAdd(current, one), counter);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  mask_ = entry;
  return absl::OkStatus();
}

absl::Status LaneEmitter::EmitRangeFor(const ir::RangeForStmt& s) {
  const PrimitiveType t = s.begin()->type().element();
  llvm::Value* begin = ops_.ToI64(Get(s.begin()), t);
  llvm::Value* end = ops_.ToI64(Get(s.end()), t);
  const bool uniform = forms_.Uniform(s.begin()) && forms_.Uniform(s.end());
  if (uniform) {
    begin = Lane0(begin);
    end = Lane0(end);
  }
  return EmitLoop(
      s, begin, end, uniform,
      [&](llvm::Value* i) -> std::vector<llvm::Value*> {
        return {b_.CreateIntCast(i, ops_.RegisterType(t), ir::IsSigned(t))};
      },
      *s.body());
}

absl::Status LaneEmitter::EmitStructFor(const ir::StructForStmt& s) {
  int64_t cells = 1;
  for (const auto& axis : snodes_.CellAxes(s.snode_id()))
    cells *= axis.second;
  return EmitLoop(
      s, b_.getInt64(0), b_.getInt64(cells), true,
      [&](llvm::Value* i) { return DecomposeCell(s.snode_id(), i); },
      *s.body());
}

absl::Status LaneEmitter::EmitWhile(const ir::WhileStmt& s) {
  // `while True` with breaks: lanes leave as they break.
  llvm::Value* entry = mask_;
  LoopState state{forms_.HasDivergentExits(&s), nullptr, nullptr, nullptr,
                  nullptr};
  auto* header = llvm::BasicBlock::Create(context_, "while.header", function_);
  auto* body = llvm::BasicBlock::Create(context_, "while.body", function_);
  auto* exit = llvm::BasicBlock::Create(context_, "while.exit", function_);
  state.continue_to = header;
  state.break_to = exit;
  if (state.divergent) {
    state.alive = EntryAlloca(entry->getType(), "alive");
    state.skip = EntryAlloca(entry->getType(), "skip");
    b_.CreateStore(entry, state.alive);
  }
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  if (state.divergent) {
    llvm::Value* alive = b_.CreateLoad(entry->getType(), state.alive);
    b_.CreateCondBr(Any(alive), body, exit);
    b_.SetInsertPoint(body);
    b_.CreateStore(NoLanes(), state.skip);
    mask_ = alive;
  } else {
    b_.CreateBr(body);
    b_.SetInsertPoint(body);
    mask_ = entry;
  }
  loops_.push_back(state);
  absl::Status status = EmitRegion(*s.body(), header);
  loops_.pop_back();
  QD_RETURN_IF_ERROR(status);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  mask_ = entry;
  return absl::OkStatus();
}

void LaneEmitter::EmitJump(const Stmt& s) {
  const LoopState& loop = loops_.back();
  const bool is_break = s.kind() == StmtKind::kBreak;
  if (!loop.divergent) {
    b_.CreateBr(is_break ? loop.break_to : loop.continue_to);
    StartDeadBlock();
    return;
  }
  // The active lanes leave the loop (break) or this iteration (continue);
  // the rest of this region is theirs alone, so it is skipped.
  llvm::Type* type = mask_->getType();
  if (is_break) {
    llvm::Value* alive = b_.CreateLoad(type, loop.alive);
    b_.CreateStore(b_.CreateAnd(alive, b_.CreateNot(mask_)), loop.alive);
  } else {
    llvm::Value* skip = b_.CreateLoad(type, loop.skip);
    b_.CreateStore(b_.CreateOr(skip, mask_), loop.skip);
  }
  b_.CreateBr(region_ends_.back());
  StartDeadBlock();
}

void LaneEmitter::SeedRandom(llvm::Value* index) {
  bool draws = false;
  ir::WalkBlock(*task_.body(), [&](const Stmt* s) {
    draws = draws || ir::Isa<ir::RandomStmt>(s);
  });
  if (!draws)
    return;
  random_ = EntryAlloca(index->getType(), "random");
  llvm::AllocaInst* iterations = EntryAlloca(index->getType(), "iterations");
  b_.CreateStore(index, iterations);
  Call(absl::StrCat("qd_random_seed_x", lanes_), b_.getVoidTy(),
       {ctx_, b_.getInt32(task_index_), iterations, random_});
}

llvm::Value* LaneEmitter::EmitRandom(const ir::RandomStmt& s) {
  llvm::Type* type = random_->getAllocatedType();
  llvm::Value* before = b_.CreateLoad(type, random_);
  llvm::AllocaInst* bits = EntryAlloca(type, "random.bits");
  Call(absl::StrCat("qd_random_next_x", lanes_), b_.getVoidTy(),
       {random_, bits});
  // Idle lanes do not draw: their streams stay where they were.
  b_.CreateStore(b_.CreateSelect(mask_, b_.CreateLoad(type, random_), before),
                 random_);
  return ops_.FromRandomBits(b_.CreateLoad(type, bits), s.type().element());
}

absl::Status LaneEmitter::EmitStmt(const Stmt& s) {
  auto set = [&](llvm::Value* v) {
    values_[&s] = v;
    return absl::OkStatus();
  };
  auto unsupported = [&](absl::string_view what) {
    return MakeError(ErrorKind::kCompilation, s.loc(),
                     absl::StrCat("in kernel '", kernel_.name(), "': ", what,
                                  " has no SIMD-lane lowering"));
  };
  switch (s.kind()) {
    case StmtKind::kConst:
      return set(ops_.Constant(static_cast<const ir::ConstStmt&>(s).value()));
    case StmtKind::kArgLoad:
      return set(EmitArgLoad(static_cast<const ir::ArgLoadStmt&>(s)));
    case StmtKind::kNdarrayShape: {
      const auto& shape = static_cast<const ir::NdarrayShapeStmt&>(s);
      return set(Splat(b_.CreateTrunc(
          Call("qd_ndarray_shape", b_.getInt64Ty(),
               {ctx_, b_.getInt32(shape.arg()), b_.getInt32(shape.axis())}),
          b_.getInt32Ty())));
    }
    case StmtKind::kNdarrayPtr:
      return set(EmitNdarrayPtr(static_cast<const ir::NdarrayPtrStmt&>(s)));
    case StmtKind::kFieldPtr: {
      QD_ASSIGN_OR_RETURN(
          llvm::Value * ptr,
          EmitFieldPtr(static_cast<const ir::FieldPtrStmt&>(s)));
      return set(ptr);
    }
    case StmtKind::kGlobalLoad:
      // Masked vector loads have no volatile form: such tasks stay scalar.
      if (static_cast<const ir::GlobalLoadStmt&>(s).is_volatile())
        return unsupported("a volatile load (qd.volatile_load)");
      return set(EmitGlobalLoad(s));
    case StmtKind::kGlobalStore:
      EmitGlobalStore(s);
      return absl::OkStatus();
    case StmtKind::kAlloca: {
      llvm::Type* type = ops_.RegisterType(s.type().element());
      llvm::AllocaInst* slot = EntryAlloca(type, "var");
      b_.CreateStore(llvm::Constant::getNullValue(type), slot);
      return set(slot);
    }
    case StmtKind::kLocalLoad:
      return set(b_.CreateLoad(ops_.RegisterType(s.type().element()),
                               Get(s.operand(0))));
    case StmtKind::kLocalStore:
      EmitLocalStore(s);
      return absl::OkStatus();
    case StmtKind::kUnaryOp: {
      const auto& unary = static_cast<const ir::UnaryOpStmt&>(s);
      if (values_.contains(&s))
        return absl::OkStatus();  // computed with its sin/cos partner
      if (const Stmt* partner = TrigPartner(unary)) {
        auto [sin, cos] = SinCos(Get(unary.input()));
        const bool is_sin = unary.op() == ir::UnaryOpKind::kSin;
        values_[partner] = is_sin ? cos : sin;
        ++sin_cos_pairs_;
        return set(is_sin ? sin : cos);
      }
      llvm::Value* v =
          ops_.Unary(unary.op(), Get(unary.input()),
                     unary.input()->type().element(), s.type().element());
      if (v == nullptr)
        return unsupported("this unary op");
      return set(v);
    }
    case StmtKind::kBinaryOp: {
      const auto& binary = static_cast<const ir::BinaryOpStmt&>(s);
      llvm::Value* v =
          ops_.Binary(binary.op(), Get(binary.lhs()), Get(binary.rhs()),
                      binary.lhs()->type().element());
      if (v == nullptr)
        return unsupported("this binary op");
      return set(v);
    }
    case StmtKind::kTernaryOp:
      return set(b_.CreateSelect(
          ops_.AsBool(Get(s.operand(0)), s.operand(0)->type().element()),
          Get(s.operand(1)), Get(s.operand(2))));
    case StmtKind::kAtomicOp: {
      QD_ASSIGN_OR_RETURN(llvm::Value * v,
                          EmitAtomic(static_cast<const ir::AtomicOpStmt&>(s)));
      return set(v);
    }
    case StmtKind::kRangeFor:
      return EmitRangeFor(static_cast<const ir::RangeForStmt&>(s));
    case StmtKind::kStructFor:
      return EmitStructFor(static_cast<const ir::StructForStmt&>(s));
    case StmtKind::kWhile:
      return EmitWhile(static_cast<const ir::WhileStmt&>(s));
    case StmtKind::kLoopIndex: {
      const auto& index = static_cast<const ir::LoopIndexStmt&>(s);
      llvm::Value* v = loop_indices_.at(index.loop())[index.axis()];
      return set(b_.CreateIntCast(v, ops_.RegisterType(s.type().element()),
                                  ir::IsSigned(s.type().element())));
    }
    case StmtKind::kBreak:
    case StmtKind::kContinue:
      EmitJump(s);
      return absl::OkStatus();
    case StmtKind::kIf:
      return EmitIf(static_cast<const ir::IfStmt&>(s));
    case StmtKind::kAssert:
      return absl::OkStatus();  // asserts run in debug mode, which is scalar
    case StmtKind::kAdStackAlloca:
      EmitAdStackAlloca(static_cast<const ir::AdStackAllocaStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kAdStackPush:
      EmitAdStackPush(static_cast<const ir::AdStackPushStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kAdStackPop:
      EmitAdStackPop(static_cast<const ir::AdStackPopStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kAdStackLoadTop:
    case StmtKind::kAdStackLoadTopAdj: {
      const StackState& st = stacks_.at(s.operand(0));
      const bool adjoint = s.kind() == StmtKind::kAdStackLoadTopAdj;
      return set(StackLoad(st, StackSlot(st, StackTop(st), adjoint)));
    }
    case StmtKind::kAdStackCapacity: {
      const StackState& st = stacks_.at(s.operand(0));
      return set(Splat(b_.CreateTrunc(st.capacity, b_.getInt32Ty())));
    }
    case StmtKind::kAdStackAccAdjoint: {
      const StackState& st = stacks_.at(s.operand(0));
      llvm::Value* slot = StackSlot(st, StackTop(st), true);
      StackStore(st, b_.CreateFAdd(StackLoad(st, slot), Get(s.operand(1))),
                 slot);
      return absl::OkStatus();
    }
    case StmtKind::kRandom:
      return set(EmitRandom(static_cast<const ir::RandomStmt&>(s)));
    case StmtKind::kThreadIndex:
      // The worker thread runs every lane: one index for all of them.
      return set(Splat(function_->getArg(3)));
    case StmtKind::kAdStackRow:
      // Lanes keep their thread's slices: the launch never gates the heap
      // of a task in lanes (threads x lanes slices are already few).
      return set(Splat(function_->getArg(3)));
    default:
      return unsupported(
          absl::StrCat("statement kind ", static_cast<int>(s.kind())));
  }
}

}  // namespace lanes

int RegistersPerValue(const ir::OffloadedTaskStmt& task) {
  int statements = 0;
  ir::WalkBlock(*task.body(), [&](const ir::Stmt* s) {
    // Locals become registers and constants operands: neither emits work.
    const bool free = ir::Isa<ir::AllocaStmt>(s) ||
                      ir::Isa<ir::LocalLoadStmt>(s) ||
                      ir::Isa<ir::LocalStoreStmt>(s) ||
                      ir::Isa<ir::ConstStmt>(s);
    statements += free ? 0 : 1;
  });
  return statements <= kWideGangStatements ? 4 : 2;
}

int LaneCount(const ir::OffloadedTaskStmt& task, int vector_bits) {
  bool wide = false;
  ir::WalkBlock(*task.body(), [&](const ir::Stmt* s) {
    if (ir::BitWidth(s->type().element()) == 64)
      wide = true;
  });
  return RegistersPerValue(task) * vector_bits / (wide ? 64 : 32);
}

absl::StatusOr<int> EmitLaneTask(llvm::Module& module, const ir::Kernel& kernel,
                                 const ir::SNodeTree& snodes,
                                 const ir::OffloadedTaskStmt& task,
                                 int task_index, int lanes, int vector_bits,
                                 const adstack::BoundsCheckPolicy& adstack_checks,
                                 const std::string& name,
                                 std::vector<AdStackSpec>* stacks) {
  lanes::LaneEmitter emitter(module, kernel, snodes, task, task_index, lanes,
                             adstack_checks, stacks);
  QD_RETURN_IF_ERROR(emitter.Emit(name, vector_bits));
  return emitter.sin_cos_pairs();
}

}  // namespace quadrants::codegen
