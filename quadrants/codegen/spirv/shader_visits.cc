// Statement kinds whose shader code is a few instructions of their own;
// the rest forward to the Emit methods of the other shader_*.cc files.
#include "quadrants/codegen/spirv/shader_emitter_internal.h"

namespace quadrants::codegen::spirv::shader {

absl::StatusOr<Id> ShaderEmitter::VisitNdarrayShape(
    const ir::NdarrayShapeStmt& s) {
  Id word =
      CtxWord(abi::kCtxNdarrayShape + 8 * (abi::kMaxNdim * s.arg() + s.axis()));
  return IntConvert(word, PrimitiveType::kU64, PrimitiveType::kI32);
}

absl::StatusOr<Id> ShaderEmitter::VisitGlobalLoad(const ir::GlobalLoadStmt& s) {
  const PrimitiveType t = s.type().element();
  if (const auto* shared = ir::DynCast<ir::SharedPtrStmt>(s.operand(0)))
    return LoadShared(*shared, t);
  Id v = s.is_volatile() ? b_.Op(spv::OpLoad, StorageType(t),
                                 {Pointer(StorageType(t), Get(s.operand(0))),
                                  kAligned | spv::MemoryAccessVolatileMask,
                                  static_cast<uint32_t>(Bytes(t))})
                         : Load(StorageType(t), Get(s.operand(0)),
                                static_cast<uint32_t>(Bytes(t)));
  // u1 is a byte in memory.
  return t == PrimitiveType::kU1 ? AsBool(v, PrimitiveType::kU8) : v;
}

absl::StatusOr<Id> ShaderEmitter::VisitGlobalStore(
    const ir::GlobalStoreStmt& s) {
  const PrimitiveType t = s.operand(1)->type().element();
  Id v = Get(s.operand(1));
  if (const auto* shared = ir::DynCast<ir::SharedPtrStmt>(s.operand(0))) {
    StoreShared(*shared, v, t);
    return kNoValue;
  }
  if (t == PrimitiveType::kU1)
    v = Cast(v, t, PrimitiveType::kU8);
  Store(Get(s.operand(0)), v, StorageType(t), static_cast<uint32_t>(Bytes(t)));
  return kNoValue;
}

absl::StatusOr<Id> ShaderEmitter::VisitLocalLoad(const ir::LocalLoadStmt& s) {
  return b_.Op(spv::OpLoad, RegType(s.type().element()), {Get(s.operand(0))});
}

absl::StatusOr<Id> ShaderEmitter::VisitLocalStore(const ir::LocalStoreStmt& s) {
  b_.OpVoid(spv::OpStore, {Get(s.operand(0)), Get(s.operand(1))});
  return kNoValue;
}

absl::StatusOr<Id> ShaderEmitter::VisitAlloca(const ir::AllocaStmt& s) {
  const PrimitiveType t = s.type().element();
  Id var = b_.LocalVariable(RegType(t));
  b_.OpVoid(spv::OpStore, {var, Zero(t)});
  return var;
}

absl::StatusOr<Id> ShaderEmitter::VisitTernaryOp(const ir::TernaryOpStmt& s) {
  Id condition = AsBool(Get(s.operand(0)), s.operand(0)->type().element());
  return b_.Op(spv::OpSelect, RegType(s.type().element()),
               {condition, Get(s.operand(1)), Get(s.operand(2))});
}

absl::StatusOr<Id> ShaderEmitter::VisitLoopIndex(const ir::LoopIndexStmt& s) {
  Id v = loop_indices_.at(s.loop())[s.axis()];
  // Loop indices are i32 (struct_for) or the range's type.
  PrimitiveType from = PrimitiveType::kI32;
  if (const auto* range = ir::DynCast<ir::RangeForStmt>(s.loop()))
    from = range->begin()->type().element();
  if (const auto* task = ir::DynCast<ir::OffloadedTaskStmt>(s.loop())) {
    if (task->task_kind() == ir::TaskKind::kRangeFor)
      from = task->begin()->type().element();
  }
  return Cast(v, from, s.type().element());
}

absl::StatusOr<Id> ShaderEmitter::Jump(const Stmt& s, bool is_break) {
  const LoopTargets& loop = loops_.back();
  if (!is_break && loop.continue_flag != 0) {
    // Unrolled: skip the rest of this copy of the body.
    b_.OpVoid(spv::OpStore, {loop.continue_flag, b_.ConstBool(true)});
    return kNoValue;
  }
  Id target = is_break ? loop.break_to : loop.continue_to;
  if (target == 0) {
    b_.Return();  // `continue` at the top of a serial task
  } else {
    b_.Branch(target);
  }
  return kNoValue;
}

absl::StatusOr<Id> ShaderEmitter::VisitBreak(const ir::BreakStmt& s) {
  return Jump(s, /*is_break=*/true);
}

absl::StatusOr<Id> ShaderEmitter::VisitContinue(const ir::ContinueStmt& s) {
  return Jump(s, /*is_break=*/false);
}

absl::StatusOr<Id> ShaderEmitter::VisitRandom(const ir::RandomStmt& s) {
  if (random_state_ == 0)
    return Unsupported(s, "qd.random() outside a task body");
  return EmitRandom(s);
}

absl::StatusOr<Id> ShaderEmitter::VisitThreadIndex(
    const ir::ThreadIndexStmt& s) {
  // The global invocation index (0 in serial tasks).
  if (invocation_ == 0)
    return Unsupported(s, "qd.global_thread_idx() in a loop bound");
  return IntConvert(invocation_, PrimitiveType::kU64, PrimitiveType::kI32);
}

Id ShaderEmitter::LoadStackTop(const Stmt& s, bool adjoint) {
  const AdStack& st = stacks_.at(s.operand(0));
  Id v = Load(RegType(st.stored), AdElement(st, AdTop(st), adjoint), st.unit);
  return Cast(v, st.stored, st.dtype);
}

absl::StatusOr<Id> ShaderEmitter::VisitAdStackAccAdjoint(
    const ir::AdStackAccAdjointStmt& s) {
  const AdStack& st = stacks_.at(s.operand(0));
  const Id type = RegType(st.stored);
  Id addr = AdElement(st, AdTop(st), true);
  Id sum = b_.Op(spv::OpFAdd, type,
                 {Load(type, addr, st.unit),
                  Cast(Get(s.operand(1)), st.dtype, st.stored)});
  Store(addr, sum, type, st.unit);
  return kNoValue;
}

}  // namespace quadrants::codegen::spirv::shader
