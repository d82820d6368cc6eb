// The scalar emitter's statements, one Visit method per kind; compound
// statements (loops, branches, stacks, atomics) are in function_emitter.cc.
#include "quadrants/codegen/llvm/function_emitter.h"

#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::codegen {

absl::Status FunctionEmitter::Define(const Stmt& s,
                                     absl::StatusOr<llvm::Value*> value) {
  QD_RETURN_IF_ERROR(value.status());
  values_[&s] = *value;
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitConst(const ir::ConstStmt& s) {
  return Define(s, ops_.Constant(s.value()));
}

absl::Status FunctionEmitter::VisitArgLoad(const ir::ArgLoadStmt& s) {
  return Define(s, EmitArgLoad(s));
}

absl::Status FunctionEmitter::VisitNdarrayShape(const ir::NdarrayShapeStmt& s) {
  llvm::Value* extent =
      Call("qd_ndarray_shape", b_.getInt64Ty(),
           {ctx_, b_.getInt32(s.arg()), b_.getInt32(s.axis())});
  return Define(s, b_.CreateTrunc(extent, b_.getInt32Ty()));
}

absl::Status FunctionEmitter::VisitNdarrayPtr(const ir::NdarrayPtrStmt& s) {
  return Define(s, EmitNdarrayPtr(s));
}

absl::Status FunctionEmitter::VisitFieldPtr(const ir::FieldPtrStmt& s) {
  return Define(s, EmitFieldPtr(s));
}

absl::Status FunctionEmitter::VisitSNodeOp(const ir::SNodeOpStmt& s) {
  absl::StatusOr<llvm::Value*> value = EmitSNodeOp(s);
  if (!value.ok() || s.op() == ir::SNodeOpKind::kAcquire)
    return Define(s, std::move(value));
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitLoad(const Stmt& s, bool global) {
  const PrimitiveType t = s.type().element();
  llvm::LoadInst* load = b_.CreateLoad(
      global ? StorageType(t) : RegisterType(t), Get(s.operand(0)));
  if (global)
    scopes_.MarkData(load);
  if (const auto* g = ir::DynCast<ir::GlobalLoadStmt>(&s))
    load->setVolatile(g->is_volatile());
  llvm::Value* v = load;
  if (global && t == PrimitiveType::kU1)
    v = b_.CreateICmpNE(v, b_.getInt8(0));
  return Define(s, v);
}

absl::Status FunctionEmitter::VisitGlobalLoad(const ir::GlobalLoadStmt& s) {
  return EmitLoad(s, /*global=*/true);
}

absl::Status FunctionEmitter::VisitLocalLoad(const ir::LocalLoadStmt& s) {
  return EmitLoad(s, /*global=*/false);
}

absl::Status FunctionEmitter::EmitStore(const Stmt& s, bool global) {
  llvm::Value* v = Get(s.operand(1));
  // u1 is a byte in memory.
  if (global && s.operand(1)->type().element() == PrimitiveType::kU1)
    v = b_.CreateZExt(v, b_.getInt8Ty());
  llvm::StoreInst* store = b_.CreateStore(v, Get(s.operand(0)));
  if (global)
    scopes_.MarkData(store);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitGlobalStore(const ir::GlobalStoreStmt& s) {
  return EmitStore(s, /*global=*/true);
}

absl::Status FunctionEmitter::VisitLocalStore(const ir::LocalStoreStmt& s) {
  return EmitStore(s, /*global=*/false);
}

absl::Status FunctionEmitter::VisitFuncArg(const ir::FuncArgStmt& s) {
  return Define(s, function_->getArg(s.index() + 2));
}

absl::Status FunctionEmitter::VisitFuncCall(const ir::FuncCallStmt& s) {
  if (s.function() < 0 ||
      s.function() >= static_cast<int>(real_functions_.size())) {
    return Unsupported(s, "a call to an undeclared function");
  }
  llvm::Value* random = random_state_ != nullptr
                            ? random_state_
                            : llvm::ConstantPointerNull::get(b_.getPtrTy());
  std::vector<llvm::Value*> args = {ctx_, random};
  for (const Stmt* operand : s.operands())
    args.push_back(Get(operand));
  b_.CreateCall(real_functions_[s.function()], args);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitReturn(const ir::ReturnStmt& s) {
  b_.CreateRetVoid();
  StartDeadBlock();
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitAlloca(const ir::AllocaStmt& s) {
  llvm::Type* type = RegisterType(s.type().element());
  llvm::AllocaInst* slot = EntryAlloca(type, "var");
  b_.CreateStore(llvm::Constant::getNullValue(type), slot);
  return Define(s, slot);
}

absl::Status FunctionEmitter::VisitUnaryOp(const ir::UnaryOpStmt& s) {
  return Define(s, EmitUnary(s));
}

absl::Status FunctionEmitter::VisitBinaryOp(const ir::BinaryOpStmt& s) {
  return Define(s, EmitBinary(s));
}

absl::Status FunctionEmitter::VisitTernaryOp(const ir::TernaryOpStmt& s) {
  llvm::Value* condition =
      AsBool(Get(s.operand(0)), s.operand(0)->type().element());
  return Define(
      s, b_.CreateSelect(condition, Get(s.operand(1)), Get(s.operand(2))));
}

absl::Status FunctionEmitter::VisitAtomicOp(const ir::AtomicOpStmt& s) {
  return Define(s, EmitAtomic(s));
}

absl::Status FunctionEmitter::VisitRangeFor(const ir::RangeForStmt& s) {
  return EmitRangeFor(s);
}

absl::Status FunctionEmitter::VisitStructFor(const ir::StructForStmt& s) {
  return EmitStructFor(s);
}

absl::Status FunctionEmitter::VisitLoopIndex(const ir::LoopIndexStmt& s) {
  llvm::Value* v = loop_indices_.at(s.loop())[s.axis()];
  const PrimitiveType t = s.type().element();
  return Define(s, b_.CreateIntCast(v, RegisterType(t), ir::IsSigned(t)));
}

absl::Status FunctionEmitter::VisitWhile(const ir::WhileStmt& s) {
  return EmitWhile(s);
}

absl::Status FunctionEmitter::EmitJump(
    llvm::BasicBlock* LoopTargets::*target) {
  llvm::BasicBlock* to = loops_.back().*target;
  if (to == nullptr) {
    // `continue` at the top of a serial task: leave the task.
    b_.CreateRetVoid();
  } else {
    b_.CreateBr(to);
  }
  StartDeadBlock();
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitBreak(const ir::BreakStmt&) {
  return EmitJump(&LoopTargets::break_to);
}

absl::Status FunctionEmitter::VisitContinue(const ir::ContinueStmt&) {
  return EmitJump(&LoopTargets::continue_to);
}

absl::Status FunctionEmitter::VisitIf(const ir::IfStmt& s) {
  return EmitIf(s);
}

absl::Status FunctionEmitter::VisitAssert(const ir::AssertStmt& s) {
  EmitAssert(s);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitDebugPrint(const ir::DebugPrintStmt& s) {
  EmitPrint(s);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitRandom(const ir::RandomStmt& s) {
  return Define(s, EmitRandom(s));
}

absl::Status FunctionEmitter::VisitThreadIndex(const ir::ThreadIndexStmt& s) {
  // The task function's thread argument: the CPU worker, or on GPUs the
  // entry's block index * block size + thread index.
  if (function_->arg_size() < 4)
    return Unsupported(s, "qd.global_thread_idx() in a loop bound");
  return Define(s, function_->getArg(3));
}

absl::Status FunctionEmitter::VisitOffloadedTask(
    const ir::OffloadedTaskStmt& s) {
  return Unsupported(s, "a nested offloaded task");
}

absl::Status FunctionEmitter::VisitAdStackAlloca(
    const ir::AdStackAllocaStmt& s) {
  EmitAdStackAlloca(s);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitAdStackPush(const ir::AdStackPushStmt& s) {
  EmitAdStackPush(s);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::VisitAdStackPop(const ir::AdStackPopStmt& s) {
  EmitAdStackPop(s);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitStackTop(const Stmt& s, bool adjoint) {
  const PrimitiveType t = s.type().element();
  llvm::LoadInst* load = b_.CreateLoad(
      StorageType(t),
      StackSlot(s.operand(0), StackTopIndex(s.operand(0)), adjoint));
  scopes_.MarkAdStack(load);
  llvm::Value* v = load;
  if (t == PrimitiveType::kU1)
    v = b_.CreateICmpNE(v, b_.getInt8(0));
  return Define(s, v);
}

absl::Status FunctionEmitter::VisitAdStackLoadTop(
    const ir::AdStackLoadTopStmt& s) {
  return EmitStackTop(s, /*adjoint=*/false);
}

absl::Status FunctionEmitter::VisitAdStackCapacity(
    const ir::AdStackCapacityStmt& s) {
  return Define(s, b_.CreateTrunc(stacks_.at(s.stack()).capacity,
                                  b_.getInt32Ty()));
}

absl::Status FunctionEmitter::VisitAdStackRow(const ir::AdStackRowStmt& s) {
  adstack_row_ =
      Call("qd_adstack_row", b_.getInt32Ty(),
           {ctx_, b_.CreateZExt(Get(s.passes()), b_.getInt32Ty()),
            function_->getArg(3)});
  return Define(s, adstack_row_);
}

absl::Status FunctionEmitter::VisitAdStackLoadTopAdj(
    const ir::AdStackLoadTopAdjStmt& s) {
  return EmitStackTop(s, /*adjoint=*/true);
}

absl::Status FunctionEmitter::VisitAdStackAccAdjoint(
    const ir::AdStackAccAdjointStmt& s) {
  const PrimitiveType t = s.operand(1)->type().element();
  llvm::Value* slot =
      StackSlot(s.operand(0), StackTopIndex(s.operand(0)), true);
  llvm::LoadInst* old = b_.CreateLoad(RegisterType(t), slot);
  scopes_.MarkAdStack(old);
  scopes_.MarkAdStack(b_.CreateStore(b_.CreateFAdd(old, Get(s.operand(1))), slot));
  return absl::OkStatus();
}


// ---- qd.simt -----------------------------------------------------------------

absl::Status FunctionEmitter::VisitSharedArray(const ir::SharedArrayStmt& s) {
  if (options_.simt == nullptr)
    return Unsupported(s, "qd.simt.block.SharedArray on this backend");
  // A task's launch sizes its shared memory; a real function called from
  // several tasks has no launch of its own.
  if (in_real_function_)
    return Unsupported(s, "qd.simt.block.SharedArray in a qd.real_func (use a qd.func)");
  // One dynamically sized block-shared buffer per launch; the task's arrays
  // take 16-byte aligned slices of it, sized at the launch
  // (CompiledTask::shared_bytes).
  constexpr int64_t kAlign = 16;
  const unsigned space = options_.simt->shared_address_space;
  llvm::GlobalVariable* shared = module_.getGlobalVariable("qd_block_shared");
  if (shared == nullptr) {
    shared = new llvm::GlobalVariable(
        module_, llvm::ArrayType::get(b_.getInt8Ty(), 0), /*isConstant=*/false,
        llvm::GlobalValue::ExternalLinkage, nullptr, "qd_block_shared", nullptr,
        llvm::GlobalValue::NotThreadLocal, space);
    shared->setAlignment(llvm::Align(kAlign));
  }
  const int64_t offset = (shared_bytes_ + kAlign - 1) / kAlign * kAlign;
  const PrimitiveType t = s.type().element();
  shared_bytes_ =
      offset + s.num_elements() *
                   static_cast<int64_t>(module_.getDataLayout().getTypeAllocSize(
                       StorageType(t)));
  llvm::Value* slice = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), shared,
                                                     static_cast<uint64_t>(offset));
  return Define(s, b_.CreateAddrSpaceCast(slice, b_.getPtrTy()));
}

absl::Status FunctionEmitter::VisitSharedPtr(const ir::SharedPtrStmt& s) {
  llvm::Value* index = ToI64(Get(s.index()), s.index()->type().element());
  return Define(s, b_.CreateInBoundsGEP(StorageType(s.type().element()),
                                        Get(s.array()), index));
}

absl::Status FunctionEmitter::VisitSimtOp(const ir::SimtOpStmt& s) {
  if (options_.simt == nullptr) {
    return Unsupported(s, absl::StrCat("qd.simt primitive '",
                                       ir::OpName(s.op()), "' on this backend"));
  }
  std::vector<llvm::Value*> args;
  for (const Stmt* operand : s.operands())
    args.push_back(Get(operand));
  llvm::Type* result = s.type().is_void()
                           ? b_.getVoidTy()
                           : RegisterType(s.type().element());
  absl::StatusOr<llvm::Value*> value =
      options_.simt->emit(b_, s.op(), args, result);
  if (!value.ok()) {
    return MakeError(ErrorKind::kCompilation, s.loc(),
                     absl::StrCat("in kernel '", kernel_.name(), "': ",
                                  value.status().message()));
  }
  if (s.type().is_void())
    return absl::OkStatus();
  return Define(s, *value);
}

}  // namespace quadrants::codegen
