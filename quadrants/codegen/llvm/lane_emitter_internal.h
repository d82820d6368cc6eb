// The SIMD-lane emitter behind EmitLaneTask (lane_emitter.h), defined in
// parts: lane_emitter.cc (the task loop, control flow, memory, random
// streams), lane_math.cc (vector math calls), lane_atomics.cc and
// lane_adstack.cc.
#ifndef QUADRANTS_CODEGEN_LLVM_LANE_EMITTER_INTERNAL_H_
#define QUADRANTS_CODEGEN_LLVM_LANE_EMITTER_INTERNAL_H_

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "quadrants/codegen/llvm/adstack_slots.h"
#include "quadrants/codegen/llvm/alias_scopes.h"
#include "quadrants/codegen/llvm/elementwise.h"
#include "quadrants/codegen/llvm/lane_emitter.h"
#include "quadrants/codegen/llvm/lane_forms.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/walk.h"

namespace quadrants::codegen::lanes {

using ir::PrimitiveType;
using ir::Stmt;
using ir::StmtKind;

class LaneEmitter {
 public:
  LaneEmitter(llvm::Module& module, const ir::Kernel& kernel,
              const ir::SNodeTree& snodes, const ir::OffloadedTaskStmt& task,
              int task_index, int lanes,
              const adstack::BoundsCheckPolicy& adstack_checks,
              std::vector<AdStackSpec>* stacks)
      : module_(module),
        context_(module.getContext()),
        b_(context_),
        scopes_(context_),
        kernel_(kernel),
        snodes_(snodes),
        task_(task),
        task_index_(task_index),
        lanes_(lanes),
        checks_(adstack_checks),
        stacks_out_(stacks),
        forms_(task, LinearStructAxis(snodes, task)),
        ops_(
            b_, lanes,
            [this](const char* name, std::vector<llvm::Value*> args,
                   PrimitiveType t) { return MathCall(name, args, t); },
            [this](const char* name, llvm::Value* a, llvm::Value* b,
                   PrimitiveType t) { return IntCall(name, a, b, t); }) {}

  absl::Status Emit(const std::string& name, int vector_bits);
  int sin_cos_pairs() const { return sin_cos_pairs_; }

 private:
  enum class Access { kUniform, kContiguous, kScattered };
  struct LoopState {
    bool divergent;
    llvm::Value* alive;  // lanes still in the loop (divergent loops)
    llvm::Value* skip;   // lanes done with this iteration (divergent)
    llvm::BasicBlock* continue_to;
    llvm::BasicBlock* break_to;
  };
  struct StackState {
    int id;
    llvm::Value* region;    // lane 0's stack: the interleaved slots
    llvm::Value* count;     // i64 or <lanes x i64> alloca
    llvm::Value* capacity;  // i64
    bool per_lane;
    bool checked;
    bool adjoint;
    int64_t elem;
    int64_t slot_bytes;
    PrimitiveType dtype;
  };

  // The struct-for task's axis whose index runs with the cell number (a
  // field with one axis); -1 when none does.
  static int LinearStructAxis(const ir::SNodeTree& snodes,
                              const ir::OffloadedTaskStmt& task);

  // ---- helpers ------------------------------------------------------------
  llvm::Value* Call(const std::string& name, llvm::Type* result,
                    std::vector<llvm::Value*> args);
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, const char* name);
  llvm::Value* Splat(llvm::Value* v) { return b_.CreateVectorSplat(lanes_, v); }
  llvm::Value* Lane0(llvm::Value* v) {
    return b_.CreateExtractElement(v, uint64_t{0});
  }
  llvm::Value* LaneIds();
  llvm::Value* Any(llvm::Value* mask) { return b_.CreateOrReduce(mask); }
  // Idle lanes of masked loads read as zeros: never poison, which would
  // reach masks and branches.
  llvm::Value* Zeros(llvm::Type* element) {
    return llvm::Constant::getNullValue(ops_.Widen(element));
  }
  llvm::Value* NoLanes() {
    return llvm::ConstantInt::getFalse(ops_.Widen(b_.getInt1Ty()));
  }
  llvm::Type* Storage(PrimitiveType t) {
    return t == PrimitiveType::kU1 ? b_.getInt8Ty() : ops_.ScalarType(t);
  }
  llvm::Value* Get(const Stmt* s) { return values_.at(s); }
  // `mask` less the lanes that left the innermost loop or its iteration.
  llvm::Value* Live(llvm::Value* mask);
  void StartDeadBlock();
  // Runs `block` under `mask`, skipped when no lane is on.
  absl::Status EmitUnder(llvm::Value* mask, const ir::Block& block);
  absl::Status EmitRegion(const ir::Block& block, llvm::BasicBlock* end);
  llvm::Value* MathCall(const char* name, std::vector<llvm::Value*> args,
                        PrimitiveType t);
  // A used cos (for a sin) or sin (for a cos) of the same f32 value later in
  // `s`'s block, which one vector call then computes with it; or null.
  const Stmt* TrigPartner(const ir::UnaryOpStmt& s);
  // {sin x, cos x} of an f32 vector from one shared range reduction.
  std::pair<llvm::Value*, llvm::Value*> SinCos(llvm::Value* x);
  llvm::Value* IntCall(const char* name, llvm::Value* a, llvm::Value* b,
                       PrimitiveType t);
  llvm::Value* DivideThroughF64(bool modulo, llvm::Value* x, llvm::Value* y,
                                bool is_signed);
  llvm::Value* PerLane(const std::string& name, llvm::Type* result,
                       std::vector<llvm::Value*> args);
  std::vector<llvm::Value*> DecomposeCell(int snode, llvm::Value* linear);
  bool IsUsed(const Stmt* s);

  // ---- statements ---------------------------------------------------------
  absl::Status EmitBlock(const ir::Block& block);
  absl::Status EmitStmt(const Stmt& s);
  llvm::Value* EmitArgLoad(const ir::ArgLoadStmt& s);
  llvm::Value* EmitNdarrayPtr(const ir::NdarrayPtrStmt& s);
  absl::StatusOr<llvm::Value*> EmitFieldPtr(const ir::FieldPtrStmt& s);
  Access AccessOf(const Stmt* ptr);
  llvm::Value* EmitGlobalLoad(const Stmt& s);
  void EmitGlobalStore(const Stmt& s);
  void EmitLocalStore(const Stmt& s);
  absl::StatusOr<llvm::Value*> EmitAtomic(const ir::AtomicOpStmt& s);
  // `s` as one scalar atomic per active lane (u1 values as bytes).
  absl::StatusOr<llvm::Value*> EmitPerLaneAtomic(const ir::AtomicOpStmt& s,
                                                 llvm::Value* ptrs,
                                                 llvm::Value* value,
                                                 llvm::Value* expected);
  using AtomicOp = llvm::AtomicRMWInst::BinOp;
  // A sum (or min, max, ...) of one atomic's lanes over a whole chunk,
  // flushed with one atomic when the chunk ends.
  struct DeferredAtomic {
    AtomicOp op;
    llvm::AllocaInst* sum;
    llvm::AllocaInst* target;
    llvm::AllocaInst* used;
  };
  llvm::Value* AtomicIdentity(AtomicOp op, llvm::Type* scalar, int bits);
  llvm::Value* ReduceLanes(AtomicOp op, llvm::Value* lanes,
                           llvm::Value* identity);
  llvm::Value* CombineTwo(AtomicOp op, llvm::Value* a, llvm::Value* b);
  bool DefersToChunkEnd(const ir::AtomicOpStmt& s);
  llvm::Value* ApplyAtomic(AtomicOp op, llvm::Value* old, llvm::Value* value);
  // (0, snode) for a field pointer, (1, argument) for an ndarray pointer,
  // else (-1, -1).
  static std::pair<int, int> TargetOf(const Stmt* ptr);
  bool IsTaskIndex(const Stmt* s) const;
  // Whether every access of the task to `ptr`'s field or ndarray indexes
  // it by constants and, last, the task index.
  bool OwnsItsElements(const Stmt& ptr);
  DeferredAtomic& DeferredFor(const ir::AtomicOpStmt& s, AtomicOp op,
                              llvm::Type* scalar, llvm::Value* identity);
  void FlushDeferredAtomics();
  absl::Status EmitIf(const ir::IfStmt& s);
  absl::Status EmitRangeFor(const ir::RangeForStmt& s);
  absl::Status EmitStructFor(const ir::StructForStmt& s);
  absl::Status EmitWhile(const ir::WhileStmt& s);
  // A loop over a scalar counter (uniform bounds) or a per-lane one.
  absl::Status EmitLoop(
      const Stmt& loop, llvm::Value* begin, llvm::Value* end,
      bool uniform_bounds,
      const std::function<std::vector<llvm::Value*>(llvm::Value*)>& indices,
      const ir::Block& body);
  void EmitJump(const Stmt& s);
  void EmitAdStackAlloca(const ir::AdStackAllocaStmt& s);
  llvm::Value* StackTop(const StackState& st);
  // Lane 0's slot (uniform depth) or every lane's slot (per-lane depth).
  llvm::Value* StackSlot(const StackState& st, llvm::Value* index,
                         bool adjoint);
  void StackStore(const StackState& st, llvm::Value* value, llvm::Value* slot);
  llvm::Value* StackLoad(const StackState& st, llvm::Value* slot);
  void EmitAdStackPush(const ir::AdStackPushStmt& s);
  void EmitAdStackPop(const ir::AdStackPopStmt& s);
  // Starts the random streams of the iterations `index` (i64 lanes).
  void SeedRandom(llvm::Value* index);
  llvm::Value* EmitRandom(const ir::RandomStmt& s);

  llvm::Module& module_;
  llvm::LLVMContext& context_;
  llvm::IRBuilder<> b_;
  AliasScopes scopes_;
  const ir::Kernel& kernel_;
  const ir::SNodeTree& snodes_;
  const ir::OffloadedTaskStmt& task_;
  const int task_index_;
  const int lanes_;
  const adstack::BoundsCheckPolicy checks_;
  std::vector<AdStackSpec>* stacks_out_;
  LaneForms forms_;
  Elementwise ops_;

  llvm::Function* function_ = nullptr;
  llvm::Value* ctx_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::Value* mask_ = nullptr;
  // The qd.random() stream state of every lane (tasks that draw).
  llvm::AllocaInst* random_ = nullptr;
  absl::flat_hash_map<const Stmt*, llvm::Value*> values_;
  int sin_cos_pairs_ = 0;
  absl::flat_hash_map<const Stmt*, std::vector<llvm::Value*>> loop_indices_;
  std::vector<LoopState> loops_;
  // Where the innermost region (branch or loop body) ends: a divergent
  // break or continue skips there.
  std::vector<llvm::BasicBlock*> region_ends_;
  absl::flat_hash_map<const Stmt*, StackState> stacks_;
  absl::flat_hash_set<const Stmt*> adjoint_stacks_;
  absl::flat_hash_set<const Stmt*> used_;
  bool used_computed_ = false;
  std::vector<DeferredAtomic> deferred_;
  absl::flat_hash_map<const Stmt*, size_t> deferred_index_;
};

}  // namespace quadrants::codegen::lanes

#endif  // QUADRANTS_CODEGEN_LLVM_LANE_EMITTER_INTERNAL_H_
