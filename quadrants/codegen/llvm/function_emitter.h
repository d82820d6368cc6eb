#ifndef QUADRANTS_CODEGEN_LLVM_FUNCTION_EMITTER_H_
#define QUADRANTS_CODEGEN_LLVM_FUNCTION_EMITTER_H_

// The scalar LLVM emitter of one task, shared by function_emitter.cc (its
// helpers and compound statements) and function_emitter_visits.cc (the
// per-kind dispatch). Private to kernel_lowering.

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "llvm/IR/IRBuilder.h"
#include "quadrants/codegen/llvm/alias_scopes.h"
#include "quadrants/codegen/llvm/elementwise.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/stmt_visitor.h"

namespace quadrants::codegen {

using ir::BinaryOpKind;
using ir::PrimitiveType;
using ir::Stmt;
using ir::StmtKind;
using ir::UnaryOpKind;

// Lowers the statements of one task (or its prologue) into one function,
// one Visit method per statement kind (function_emitter_visits.cc).
class FunctionEmitter : public ir::StmtVisitor<FunctionEmitter, absl::Status> {
 public:
  FunctionEmitter(llvm::Module& module, const ir::Kernel& kernel,
                  const ir::SNodeTree& snodes, const LoweringOptions& options,
                  std::vector<ErrorSite>& sites,
                  std::vector<ir::PrintSite>& print_sites)
      : module_(module),
        context_(module.getContext()),
        b_(context_),
        scopes_(context_),
        kernel_(kernel),
        snodes_(snodes),
        options_(options),
        sites_(sites),
        print_sites_(print_sites),
        ops_(
            b_, 0,
            [this](const char* name, std::vector<llvm::Value*> args,
                   PrimitiveType t) {
              return MathCall(name, std::move(args), t);
            },
            [this](const char* name, llvm::Value* a, llvm::Value* b,
                   PrimitiveType t) { return IntRuntimeCall(name, a, b, t); }) {
  }

  // void name(ptr ctx, i64 begin, i64 end, i32 thread_id)
  absl::Status EmitTask(const ir::OffloadedTaskStmt& task,
                        const std::string& name);
  // Every real function of the kernel as void qd_fn<i>_<name>(ptr ctx,
  // ptr random_state, params...); called before the tasks that call them
  // are emitted.
  absl::Status EmitRealFunctions();
  // Bytes of block-shared memory the last EmitTask's shared arrays take.
  int64_t task_shared_bytes() const { return shared_bytes_; }
  // void name(ptr ctx, ptr out): evaluates the prologue, stores the bounds.
  absl::Status EmitBounds(const ir::OffloadedTaskStmt& task,
                          const std::string& name);

 private:
  struct LoopTargets {
    llvm::BasicBlock* continue_to;
    llvm::BasicBlock* break_to;  // null where break is not allowed
  };

  // ---- helpers ------------------------------------------------------------
  llvm::Type* RegisterType(PrimitiveType t) { return ops_.RegisterType(t); }
  llvm::Type* StorageType(PrimitiveType t);  // u1 is a byte in memory
  llvm::Value* Get(const Stmt* s) { return values_.at(s); }
  llvm::Value* Call(const std::string& name, llvm::Type* result,
                    std::vector<llvm::Value*> args);
  llvm::Value* AsBool(llvm::Value* v, PrimitiveType t) {
    return ops_.AsBool(v, t);
  }
  llvm::Value* ToI64(llvm::Value* v, PrimitiveType t) {
    return ops_.ToI64(v, t);
  }
  llvm::Value* Cast(llvm::Value* v, PrimitiveType from, PrimitiveType to) {
    return ops_.Cast(v, from, to);
  }
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, const char* name);
  llvm::Function* BeginFunction(const std::string& name,
                                std::vector<llvm::Type*> params);
  void StartDeadBlock();
  int AddSite(std::string description, const SourceLocation& loc);
  absl::Status Unsupported(const Stmt& s, absl::string_view what);

  // ---- statements ---------------------------------------------------------
  friend class ir::StmtVisitor<FunctionEmitter, absl::Status>;
  absl::Status VisitStmt(const Stmt& s) {
    return Unsupported(s, "this statement");
  }
  absl::Status VisitConst(const ir::ConstStmt& s);
  absl::Status VisitArgLoad(const ir::ArgLoadStmt& s);
  absl::Status VisitNdarrayShape(const ir::NdarrayShapeStmt& s);
  absl::Status VisitNdarrayPtr(const ir::NdarrayPtrStmt& s);
  absl::Status VisitFieldPtr(const ir::FieldPtrStmt& s);
  absl::Status VisitSNodeOp(const ir::SNodeOpStmt& s);
  absl::Status VisitGlobalLoad(const ir::GlobalLoadStmt& s);
  absl::Status VisitLocalLoad(const ir::LocalLoadStmt& s);
  absl::Status VisitGlobalStore(const ir::GlobalStoreStmt& s);
  absl::Status VisitLocalStore(const ir::LocalStoreStmt& s);
  absl::Status VisitAlloca(const ir::AllocaStmt& s);
  absl::Status VisitUnaryOp(const ir::UnaryOpStmt& s);
  absl::Status VisitBinaryOp(const ir::BinaryOpStmt& s);
  absl::Status VisitTernaryOp(const ir::TernaryOpStmt& s);
  absl::Status VisitAtomicOp(const ir::AtomicOpStmt& s);
  absl::Status VisitRangeFor(const ir::RangeForStmt& s);
  absl::Status VisitStructFor(const ir::StructForStmt& s);
  absl::Status VisitLoopIndex(const ir::LoopIndexStmt& s);
  absl::Status VisitWhile(const ir::WhileStmt& s);
  absl::Status VisitBreak(const ir::BreakStmt& s);
  absl::Status VisitContinue(const ir::ContinueStmt& s);
  absl::Status VisitIf(const ir::IfStmt& s);
  absl::Status VisitAssert(const ir::AssertStmt& s);
  absl::Status VisitDebugPrint(const ir::DebugPrintStmt& s);
  absl::Status VisitRandom(const ir::RandomStmt& s);
  absl::Status VisitSharedArray(const ir::SharedArrayStmt& s);
  absl::Status VisitSharedPtr(const ir::SharedPtrStmt& s);
  absl::Status VisitSimtOp(const ir::SimtOpStmt& s);
  absl::Status VisitThreadIndex(const ir::ThreadIndexStmt& s);
  absl::Status VisitFuncArg(const ir::FuncArgStmt& s);
  absl::Status VisitFuncCall(const ir::FuncCallStmt& s);
  absl::Status VisitReturn(const ir::ReturnStmt& s);
  absl::Status VisitOffloadedTask(const ir::OffloadedTaskStmt& s);
  absl::Status VisitAdStackAlloca(const ir::AdStackAllocaStmt& s);
  absl::Status VisitAdStackPush(const ir::AdStackPushStmt& s);
  absl::Status VisitAdStackPop(const ir::AdStackPopStmt& s);
  absl::Status VisitAdStackLoadTop(const ir::AdStackLoadTopStmt& s);
  absl::Status VisitAdStackCapacity(const ir::AdStackCapacityStmt& s);
  absl::Status VisitAdStackRow(const ir::AdStackRowStmt& s);
  absl::Status VisitAdStackLoadTopAdj(const ir::AdStackLoadTopAdjStmt& s);
  absl::Status VisitAdStackAccAdjoint(const ir::AdStackAccAdjointStmt& s);
  // Records `value` (or its error) as the value of `s`.
  absl::Status Define(const Stmt& s, absl::StatusOr<llvm::Value*> value);
  // Shared by the global and local forms of a load and a store.
  absl::Status EmitLoad(const Stmt& s, bool global);
  absl::Status EmitStore(const Stmt& s, bool global);
  // `break` and `continue`.
  absl::Status EmitJump(llvm::BasicBlock* LoopTargets::*target);
  absl::Status EmitStackTop(const Stmt& s, bool adjoint);

  absl::Status EmitBlock(const ir::Block& block);
  llvm::Value* EmitArgLoad(const ir::ArgLoadStmt& s);
  llvm::Value* EmitNdarrayPtr(const ir::NdarrayPtrStmt& s);
  absl::StatusOr<llvm::Value*> EmitFieldPtr(const ir::FieldPtrStmt& s);
  absl::StatusOr<llvm::Value*> EmitSNodeOp(const ir::SNodeOpStmt& s);
  // ANDs `valid` with 0 <= index < extent (reporting a failure); a null
  // `valid` means checks are off.
  void CheckIndex(llvm::Value*& valid, int site, int axis, llvm::Value* index,
                  llvm::Value* extent);
  // `ptr`, or the runtime's scratch slot when a check failed.
  llvm::Value* GuardedPointer(llvm::Value* valid, llvm::Value* ptr);
  // Adstack statements.
  void EmitAdStackAlloca(const ir::AdStackAllocaStmt& s);
  llvm::Value* StackSlot(const Stmt* stack, llvm::Value* index, bool adjoint);
  llvm::Value* StackTopIndex(const Stmt* stack);
  void EmitAdStackPush(const ir::AdStackPushStmt& s);
  void EmitAdStackPop(const ir::AdStackPopStmt& s);
  absl::StatusOr<llvm::Value*> EmitUnary(const ir::UnaryOpStmt& s);
  absl::StatusOr<llvm::Value*> EmitBinary(const ir::BinaryOpStmt& s);
  absl::StatusOr<llvm::Value*> EmitAtomic(const ir::AtomicOpStmt& s);
  llvm::Value* MathCall(const char* name, std::vector<llvm::Value*> args,
                        PrimitiveType t);
  llvm::Value* IntRuntimeCall(const char* name, llvm::Value* a, llvm::Value* b,
                              PrimitiveType t);
  absl::Status EmitRangeFor(const ir::RangeForStmt& s);
  absl::Status EmitStructFor(const ir::StructForStmt& s);
  absl::Status EmitWhile(const ir::WhileStmt& s);
  absl::Status EmitIf(const ir::IfStmt& s);
  void EmitAssert(const ir::AssertStmt& s);
  // A value as the 64 bits the runtime carries: integers extended, floats
  // as f64 bits.
  llvm::Value* AsBits(const Stmt* value);
  void EmitPrint(const ir::DebugPrintStmt& s);
  // Starts the random stream of one iteration (when the task draws any).
  void SeedRandom(llvm::Value* iteration);
  absl::StatusOr<llvm::Value*> EmitRandom(const ir::RandomStmt& s);
  // Emits `for i in [begin, end)` over i64 and calls `body(i)` inside.
  absl::Status EmitCountedLoop(
      llvm::Value* begin, llvm::Value* end,
      const std::function<absl::Status(llvm::Value*)>& body);
  // Per-axis indices of a linear cell number of dense SNode `snode`.
  std::vector<llvm::Value*> DecomposeCell(int snode, llvm::Value* linear);

  llvm::Module& module_;
  llvm::LLVMContext& context_;
  llvm::IRBuilder<> b_;
  AliasScopes scopes_;
  const ir::Kernel& kernel_;
  const ir::SNodeTree& snodes_;
  const LoweringOptions& options_;
  std::vector<ErrorSite>& sites_;
  std::vector<ir::PrintSite>& print_sites_;
  Elementwise ops_;

  llvm::Function* function_ = nullptr;
  std::vector<llvm::Function*> real_functions_;
  bool functions_draw_ = false;  // some real function calls qd.random()
  llvm::Value* ctx_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  absl::flat_hash_map<const Stmt*, llvm::Value*> values_;
  // Loop statement -> its current index per axis (valid inside its body).
  absl::flat_hash_map<const Stmt*, std::vector<llvm::Value*>> loop_indices_;
  std::vector<LoopTargets> loops_;

  struct StackState {
    int id;
    llvm::Value* base;      // the stack's slice: 8 reserved bytes, the slots
    llvm::Value* count;     // i64 alloca: pushes minus pops (a register)
    llvm::Value* capacity;  // i64, published by the host per launch
    // Interleaved layout: bytes between consecutive 8-byte words of one
    // thread's stack (8 x threads); null for contiguous per-thread slices.
    llvm::Value* word_stride;
    int64_t unit;  // bytes per interleaved word: 4 or 8
    int64_t slot_bytes;
    int64_t elem_bytes;
    // Bounds checks are elided only where the capacity is exact (a constant
    // trip count or a launch-time expression); default-sized and forced
    // stacks are always checked, so a longer loop overflows cleanly.
    bool checked;
    bool adjoint;  // slots hold (primal, adjoint)
  };
  absl::flat_hash_map<const Stmt*, StackState> stacks_;
  // The heap row of the task's adstacks (AdStackRowStmt); null: the
  // thread's slice.
  llvm::Value* adstack_row_ = nullptr;
  // Whether any statement reads `s`'s value.
  bool IsUsed(const Stmt* s);
  // Whether the kernel reads or accumulates adjoints of stack `s`.
  bool HasStackAdjoint(const Stmt* s);
  absl::flat_hash_set<const Stmt*> adjoint_stacks_;
  bool adjoint_stacks_computed_ = false;
  absl::flat_hash_set<const Stmt*> used_;
  bool used_computed_ = false;
  std::vector<AdStackSpec>* task_stacks_ = nullptr;
  int task_index_ = 0;
  // The current iteration's random state (an i64 slot); null when the task
  // draws no random numbers.
  llvm::Value* random_state_ = nullptr;
  int64_t shared_bytes_ = 0;  // the current task's block-shared arrays
  bool in_real_function_ = false;  // emitting a qd.real_func's body

 public:
  void set_task_stacks(std::vector<AdStackSpec>* stacks) {
    task_stacks_ = stacks;
  }
  void set_task_index(int index) { task_index_ = index; }
};

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_FUNCTION_EMITTER_H_
