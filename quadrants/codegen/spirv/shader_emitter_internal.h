// The emitter of one shader of one offloaded task, behind GenerateSpirv
// (kernel_codegen.h), defined in parts: kernel_codegen.cc (setup, tasks,
// statement dispatch), shader_control_flow.cc (selections, loops and their
// unrolling), shader_memory.cc (types, constants, arguments, field and
// ndarray addresses), shader_math.cc (casts, unary and binary ops, math
// functions, random streams), shader_atomics.cc, shader_adstack.cc and
// shader_debug.cc (error reports, assertions, prints).
#ifndef QUADRANTS_CODEGEN_SPIRV_SHADER_EMITTER_INTERNAL_H_
#define QUADRANTS_CODEGEN_SPIRV_SHADER_EMITTER_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/codegen/spirv/kernel_codegen.h"
#include "quadrants/codegen/spirv/math_library.h"
#include "quadrants/codegen/spirv/module_builder.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/stmt_visitor.h"
#include "quadrants/ir/walk.h"

namespace quadrants::codegen::spirv::shader {

using ir::BinaryOpKind;
using ir::PrimitiveType;
using ir::Stmt;
using ir::StmtKind;
using ir::UnaryOpKind;
using Fn = MathLibrary::Fn;

constexpr uint32_t kAligned = spv::MemoryAccessAlignedMask;

inline int Bytes(PrimitiveType t) {
  return std::max(1, ir::BitWidth(t) / 8);
}

// Emits one shader of one task. Each statement kind has a Visit method
// returning the statement's value, or kNoValue for statements without one
// (shader_visits.cc; the one-line ones are here).
class ShaderEmitter : public ir::StmtVisitor<ShaderEmitter, absl::StatusOr<Id>> {
 public:
  ShaderEmitter(const ir::Kernel& kernel, const ir::SNodeTree& snodes,
                const CodegenOptions& options, int task_index,
                std::vector<ErrorSite>& sites,
                std::vector<ir::PrintSite>& print_sites)
      : kernel_(kernel),
        snodes_(snodes),
        options_(options),
        task_index_(task_index),
        sites_(sites),
        print_sites_(print_sites) {}

  absl::StatusOr<std::vector<uint32_t>> EmitTask(
      const ir::OffloadedTaskStmt& task);
  absl::StatusOr<std::vector<uint32_t>> EmitBounds(
      const ir::OffloadedTaskStmt& task);
  // Where this task's adstack record starts in the launch's records
  // (shader_abi.h), and the stacks its code allocated.
  void set_ad_record_offset(uint32_t offset) { ad_record_offset_ = offset; }
  std::vector<AdStackSpec> TakeAdStacks() { return std::move(adstacks_); }

 private:
  // One adstack of the task: its slice of a heap and its counter.
  struct AdStack {
    uint32_t id = 0;        // position in the task's stacks
    PrimitiveType dtype;    // the IR element type
    PrimitiveType stored;   // the heap element type (f32/f64/i32/i64)
    uint32_t unit = 4;      // bytes of a heap element
    Id base = 0;            // u64: element 0 of this invocation
    Id element_stride = 0;  // u64: bytes between its elements
    Id capacity = 0;        // u32: slots
    bool adjoint = false;   // (primal, adjoint) per slot
    bool checked = false;   // clamp and record overflows
  };
  struct LoopTargets {
    Id continue_to;  // 0: return (the top of a serial task)
    Id break_to;
    const Stmt* loop = nullptr;  // the IR loop (null for a task's loop)
    // Unrolled loops: `continue` sets this bool variable, which makes the
    // rest of the current copy of the body skip, instead of branching.
    Id continue_flag = 0;
  };

  void Begin(uint32_t local_size);
 public:
  // Bytes of Workgroup memory the task's shared arrays take.
  int64_t shared_bytes() const { return shared_bytes_; }

 private:
  std::vector<uint32_t> End();

  // ---- types and memory -------------------------------------------------
  Id RegType(PrimitiveType t);
  Id StorageType(PrimitiveType t);  // u1 is a byte in memory
  Id U64() { return b_.IntType(64, false); }
  Id I64() { return b_.IntType(64, true); }
  Id U32() { return b_.IntType(32, false); }
  Id I32() { return b_.IntType(32, true); }
  Id Bool() { return b_.BoolType(); }
  // addr + offset, for an offset value (u64 id) or a constant.
  Id AddrPlus(Id addr, Id offset_u64) {
    return b_.Op(spv::OpIAdd, U64(), {addr, offset_u64});
  }
  Id AddrAdd(Id addr, uint64_t offset) {
    return offset == 0 ? addr : AddrPlus(addr, b_.ConstU64(offset));
  }
  Id Pointer(Id type, Id addr) {
    return b_.Op(spv::OpConvertUToPtr,
                 b_.PointerType(spv::StorageClassPhysicalStorageBuffer, type),
                 {addr});
  }
  Id Load(Id type, Id addr, uint32_t align) {
    return b_.Op(spv::OpLoad, type, {Pointer(type, addr), kAligned, align});
  }
  void Store(Id addr, Id value, Id type, uint32_t align) {
    b_.OpVoid(spv::OpStore, {Pointer(type, addr), value, kAligned, align});
  }
  // A u64 of the launch context or runtime record, loaded once in the entry
  // block.
  Id CtxWord(uint32_t offset);
  Id RuntimeAddr() { return CtxWord(abi::kCtxRuntime); }
  Id RuntimeWord(uint32_t offset);
  // The u64 at `address()` (made in the entry block), loaded there once per
  // offset: `words` holds the loads made so far.
  Id EntryWord(absl::flat_hash_map<uint32_t, Id>& words, uint32_t offset,
               const std::function<Id()>& address);

  // ---- values -------------------------------------------------------------
  Id Get(const Stmt* s) { return values_.at(s); }
  Id AsBool(Id v, PrimitiveType t);
  Id IntConvert(Id v, PrimitiveType from, PrimitiveType to);
  Id Cast(Id v, PrimitiveType from, PrimitiveType to);
  Id ToI64(Id v, PrimitiveType t) { return Cast(v, t, PrimitiveType::kI64); }
  Id Zero(PrimitiveType t);
  int AddSite(std::string description, const SourceLocation& loc);
  absl::Status Unsupported(const Stmt& s, absl::string_view what);
  absl::Status CheckTypes(const ir::Block& block);
  absl::Status CheckType(const Stmt& s, PrimitiveType t, bool in_memory);

  // ---- control flow -------------------------------------------------------
  // if (cond) { then() } with a structured selection.
  void If(Id cond, const std::function<void()>& then);
  // The labels of a structured loop whose header branches straight to its
  // body.
  struct LoopLabels {
    Id header;
    Id body;
    Id latch;
    Id merge;
  };
  // Branches into a new such loop and starts its body.
  LoopLabels OpenLoop();
  // do { done = attempt(); } while (!done), as a structured loop.
  void RetryUntil(const std::function<Id()>& attempt);
  // for (i = begin; i < end; i += step) body(i), over i64. `loop` is the
  // IR loop (for unrolling; null: no unrolling).
  absl::Status CountedLoop(Id begin, Id end, Id step,
                           const std::function<absl::Status(Id)>& body,
                           const Stmt* loop = nullptr);
  // Copies of a loop body per iteration of the emitted loop. Mesa's
  // lavapipe stops every loop of a shader invocation after 65535 back edges
  // in total, so long serial loops run several iterations per back edge
  // (all of them for short constant trip counts).
  int UnrollFactor(const Stmt* loop);
  int64_t Size(const Stmt* s);
  int64_t Size(const ir::Block& block);
  // Whether `s` holds a `continue` of the loop being emitted that sets its
  // continue flag.
  bool HasFlaggedContinue(const Stmt* s);
  bool HasFlaggedContinueTarget(const Stmt* loop);
  // Emits the statements of `block` from `first` on.
  absl::Status EmitStatements(const ir::Block& block, size_t first);
  absl::flat_hash_map<const Stmt*, int64_t> sizes_;
  absl::flat_hash_map<const Stmt*, const Stmt*> continue_targets_;
  bool continue_targets_computed_ = false;
  void ReportError(uint32_t code, int site, Id v0, Id v1, Id v2);

  // ---- adstack ------------------------------------------------------------
  // A u64 of this task's adstack record, loaded once in the entry block.
  Id AdWord(uint32_t offset);
  // The task's counters: one Function-scope u32 array indexed by stack id,
  // so optimizers keep one array instead of a phi per stack at each loop
  // header.
  Id AdCounter(uint32_t id);
  Id AdElement(const AdStack& st, Id slot, bool adjoint);
  Id AdTop(const AdStack& st);
  void EmitAdStackAlloca(const ir::AdStackAllocaStmt& s);
  void EmitAdStackPush(const ir::AdStackPushStmt& s);
  void EmitAdStackPop(const ir::AdStackPopStmt& s);
  bool HasStackAdjoint(const Stmt* stack);
  uint32_t ad_record_offset_ = 0;
  uint32_t ad_num_stacks_ = 0;  // allocas in the task
  Id ad_counters_ = 0;
  Id ad_counter_base_ = 0;  // u32 0 that optimizers cannot fold
  Id invocation_ = 0;       // u64: this invocation's index into the heap slices
  // The slice and the slice count of the task's stacks: the invocation
  // and kAdInvocations, or a claimed row and kAdRows (AdStackRowStmt).
  Id ad_slice_ = 0;
  Id ad_slices_ = 0;
  Id EmitAdStackRow(const ir::AdStackRowStmt& s);
  absl::flat_hash_map<uint32_t, Id> ad_words_;
  absl::flat_hash_map<const Stmt*, AdStack> stacks_;
  absl::flat_hash_map<const Stmt*, bool> adjoint_stacks_;
  bool adjoint_stacks_computed_ = false;
  std::vector<AdStackSpec> adstacks_;

  // ---- statements ---------------------------------------------------------
  friend class ir::StmtVisitor<ShaderEmitter, absl::StatusOr<Id>>;
  static constexpr Id kNoValue = 0;
  // Emits `s` and records its value.
  absl::Status EmitStmt(const Stmt& s);
  absl::StatusOr<Id> VisitStmt(const Stmt& s) {
    return Unsupported(s, "this statement");
  }
  absl::StatusOr<Id> VisitConst(const ir::ConstStmt& s) { return EmitConst(s); }
  absl::StatusOr<Id> VisitArgLoad(const ir::ArgLoadStmt& s) {
    return EmitArgLoad(s);
  }
  absl::StatusOr<Id> VisitNdarrayShape(const ir::NdarrayShapeStmt& s);
  absl::StatusOr<Id> VisitNdarrayPtr(const ir::NdarrayPtrStmt& s) {
    return EmitNdarrayPtr(s);
  }
  absl::StatusOr<Id> VisitFieldPtr(const ir::FieldPtrStmt& s) {
    return EmitFieldPtr(s);
  }
  absl::StatusOr<Id> VisitGlobalLoad(const ir::GlobalLoadStmt& s);
  absl::StatusOr<Id> VisitGlobalStore(const ir::GlobalStoreStmt& s);
  absl::StatusOr<Id> VisitLocalLoad(const ir::LocalLoadStmt& s);
  absl::StatusOr<Id> VisitLocalStore(const ir::LocalStoreStmt& s);
  absl::StatusOr<Id> VisitAlloca(const ir::AllocaStmt& s);
  absl::StatusOr<Id> VisitUnaryOp(const ir::UnaryOpStmt& s) {
    return EmitUnary(s);
  }
  absl::StatusOr<Id> VisitBinaryOp(const ir::BinaryOpStmt& s) {
    return EmitBinary(s);
  }
  absl::StatusOr<Id> VisitTernaryOp(const ir::TernaryOpStmt& s);
  absl::StatusOr<Id> VisitAtomicOp(const ir::AtomicOpStmt& s) {
    return EmitAtomic(s);
  }
  absl::StatusOr<Id> VisitLoopIndex(const ir::LoopIndexStmt& s);
  absl::StatusOr<Id> VisitBreak(const ir::BreakStmt& s);
  absl::StatusOr<Id> VisitContinue(const ir::ContinueStmt& s);
  absl::StatusOr<Id> VisitRandom(const ir::RandomStmt& s);
  absl::StatusOr<Id> VisitSharedArray(const ir::SharedArrayStmt& s);
  absl::StatusOr<Id> VisitSharedPtr(const ir::SharedPtrStmt& s);
  absl::StatusOr<Id> VisitSimtOp(const ir::SimtOpStmt& s) { return EmitSimt(s); }
  absl::StatusOr<Id> VisitThreadIndex(const ir::ThreadIndexStmt& s);
  absl::StatusOr<Id> VisitOffloadedTask(const ir::OffloadedTaskStmt& s) {
    return Unsupported(s, "a nested offloaded task");
  }
  absl::StatusOr<Id> VisitAdStackLoadTop(const ir::AdStackLoadTopStmt& s) {
    return LoadStackTop(s, /*adjoint=*/false);
  }
  absl::StatusOr<Id> VisitAdStackCapacity(const ir::AdStackCapacityStmt& s) {
    return b_.Op(spv::OpBitcast, RegType(ir::PrimitiveType::kI32),
                 {stacks_.at(s.stack()).capacity});
  }
  absl::StatusOr<Id> VisitAdStackRow(const ir::AdStackRowStmt& s) {
    return EmitAdStackRow(s);
  }
  absl::StatusOr<Id> VisitAdStackLoadTopAdj(
      const ir::AdStackLoadTopAdjStmt& s) {
    return LoadStackTop(s, /*adjoint=*/true);
  }
  absl::StatusOr<Id> VisitAdStackAccAdjoint(
      const ir::AdStackAccAdjointStmt& s);
  // Statements that only have effects, emitted by an Emit method.
  template <typename StmtT>
  using EffectOf = absl::Status (ShaderEmitter::*)(const StmtT&);
  template <typename StmtT, EffectOf<StmtT> kEmit>
  absl::StatusOr<Id> Effect(const StmtT& s) {
    QD_RETURN_IF_ERROR((this->*kEmit)(s));
    return kNoValue;
  }
  absl::StatusOr<Id> VisitRangeFor(const ir::RangeForStmt& s) {
    return Effect<ir::RangeForStmt, &ShaderEmitter::EmitRangeFor>(s);
  }
  absl::StatusOr<Id> VisitStructFor(const ir::StructForStmt& s) {
    return Effect<ir::StructForStmt, &ShaderEmitter::EmitStructFor>(s);
  }
  absl::StatusOr<Id> VisitWhile(const ir::WhileStmt& s) {
    return Effect<ir::WhileStmt, &ShaderEmitter::EmitWhile>(s);
  }
  absl::StatusOr<Id> VisitIf(const ir::IfStmt& s) {
    return Effect<ir::IfStmt, &ShaderEmitter::EmitIf>(s);
  }
  absl::StatusOr<Id> VisitAssert(const ir::AssertStmt& s) {
    EmitAssert(s);
    return kNoValue;
  }
  absl::StatusOr<Id> VisitDebugPrint(const ir::DebugPrintStmt& s) {
    EmitPrint(s);
    return kNoValue;
  }
  absl::StatusOr<Id> VisitAdStackAlloca(const ir::AdStackAllocaStmt& s) {
    EmitAdStackAlloca(s);
    return kNoValue;
  }
  absl::StatusOr<Id> VisitAdStackPush(const ir::AdStackPushStmt& s) {
    EmitAdStackPush(s);
    return kNoValue;
  }
  absl::StatusOr<Id> VisitAdStackPop(const ir::AdStackPopStmt& s) {
    EmitAdStackPop(s);
    return kNoValue;
  }
  Id LoadStackTop(const Stmt& s, bool adjoint);
  absl::StatusOr<Id> Jump(const Stmt& s, bool is_break);

  absl::Status EmitBlock(const ir::Block& block);
  Id EmitConst(const ir::ConstStmt& s);
  Id EmitArgLoad(const ir::ArgLoadStmt& s);
  Id EmitNdarrayPtr(const ir::NdarrayPtrStmt& s);
  absl::StatusOr<Id> EmitFieldPtr(const ir::FieldPtrStmt& s);
  void CheckIndex(Id* valid, int site, int axis, Id index, Id extent);
  Id Guarded(Id valid, Id addr);
  absl::StatusOr<Id> EmitUnary(const ir::UnaryOpStmt& s);
  absl::StatusOr<Id> EmitBinary(const ir::BinaryOpStmt& s);
  absl::StatusOr<Id> EmitAtomic(const ir::AtomicOpStmt& s);
  Id Math(Fn fn, std::vector<Id> args, PrimitiveType t, GLSLstd450 f32_inst);
  Id IntDivMod(bool mod, Id x, Id y, PrimitiveType t);
  // Round half away from zero (C's round).
  Id Round(Id x, PrimitiveType t);
  // clz, popcnt or ffs of an integer of type t (any width), as i32.
  Id BitCount(UnaryOpKind op, Id x, PrimitiveType t);
  Id BitCount32(UnaryOpKind op, Id word);
  // C's frexp on the bits: {mantissa, i32 exponent}; zero, infinities and
  // NaN come back unchanged with exponent 0.
  std::pair<Id, Id> Frexp(Id x, PrimitiveType t);
  Id MinMax(bool is_min, Id x, Id y, PrimitiveType t);
  Id Compare(BinaryOpKind op, Id x, Id y, PrimitiveType t);
  // Atomic read-modify-write through a compare-exchange loop on the 32-bit
  // or 64-bit word holding the value; returns the old value.
  Id CasLoop(Id addr, PrimitiveType t, const std::function<Id(Id)>& update);
  // An atomic instruction on a buffer-address pointer, emitted as a call of
  // a small function holding it (one per instruction form). SPIRV-Cross
  // gives an atomic an MSL address space only through a variable behind
  // its pointer, and a pointer parameter is one; drivers inline the call.
  Id Atomic(spv::Op op, Id type, const std::vector<Id>& operands);
  void BuildAtomicFunctions();
  struct AtomicForm {
    spv::Op op;
    Id type;
    std::vector<Id> constants;     // scope and semantics operands
    std::vector<int> value_slots;  // operand positions passed as parameters
    Id function;
  };
  std::vector<AtomicForm> atomic_forms_;
  // 64-bit integer add/sub/and/or/xor through two 32-bit atomics.
  Id SplitWordAtomic(ir::AtomicOpKind op, Id addr, Id value, PrimitiveType t);
  // Plain read-modify-write under a spin lock chosen by the address (64-bit
  // floats and min/max on devices without 64-bit atomics).
  Id LockedUpdate(Id addr, PrimitiveType t,
                  const std::function<Id(Id)>& update);
  Id Combine(ir::AtomicOpKind op, Id old, Id value, PrimitiveType t);
  // A float add of `value` to `addr`, which every invocation of the launch
  // shares (a scalar loss): the subgroup's active invocations sum their
  // values and one of them adds the sum, so the address sees one atomic
  // per subgroup. Float addition then associates differently, as it does
  // between any two schedules.
  void SubgroupAggregatedAdd(Id addr, Id value, PrimitiveType t);
  // A float add through the device's native instruction, or else a
  // compare-exchange loop.
  Id FloatAdd(Id addr, Id value, PrimitiveType t);
  // Whether any statement of the kernel reads `s`'s value.
  bool IsUsed(const Stmt* s);
  absl::flat_hash_set<const Stmt*> used_;
  bool used_computed_ = false;
  // The native atomic instruction of `s` on a 32-bit (or, with the device's
  // 64-bit atomics, 64-bit) integer; OpNop for atomic_mul, which has none.
  spv::Op NativeIntAtomic(const ir::AtomicOpStmt& s);
  absl::Status EmitRangeFor(const ir::RangeForStmt& s);
  absl::Status EmitStructFor(const ir::StructForStmt& s);
  absl::Status EmitWhile(const ir::WhileStmt& s);
  absl::Status EmitIf(const ir::IfStmt& s);
  void EmitAssert(const ir::AssertStmt& s);
  Id AsBits(const Stmt* value);
  Id F32BitsAsF64Bits(Id v);
  void EmitPrint(const ir::DebugPrintStmt& s);
  void SeedRandom(Id iteration);
  Id NextRandom();
  Id EmitRandom(const ir::RandomStmt& s);
  std::vector<Id> DecomposeCell(int snode, Id linear);

  const ir::Kernel& kernel_;
  const ir::SNodeTree& snodes_;
  const CodegenOptions& options_;
  int task_index_;
  std::vector<ErrorSite>& sites_;
  std::vector<ir::PrintSite>& print_sites_;

  ModuleBuilder b_;
  MathLibrary math_{b_};
  Id main_ = 0;
  // The entry point's interface: every Input and Workgroup variable used.
  std::vector<Id> interface_;
  // Invocations per workgroup of the task's shader.
  int64_t block_size_ = abi::kBlockSize;
  // qd.simt: the task's block-shared arrays, and builtins made at first use.
  struct SharedArray {
    Id variable = 0;
    Id word = 0;           // the stored element type
    bool as_word = false;  // stored as an unsigned word (32 or 64 bits)
  };
  Id ToSharedWord(const SharedArray& array, Id value, PrimitiveType t);
  Id FromSharedWord(const SharedArray& array, Id word, PrimitiveType t);
  absl::flat_hash_map<const Stmt*, SharedArray> shared_arrays_;
  int64_t shared_bytes_ = 0;
  absl::flat_hash_map<uint32_t, Id> builtins_;
  Id Builtin(spv::BuiltIn builtin, bool vector);
  Id SharedWordPointer(const ir::SharedPtrStmt& s);
  Id LoadShared(const ir::SharedPtrStmt& ptr, PrimitiveType t);
  void StoreShared(const ir::SharedPtrStmt& ptr, Id value, PrimitiveType t);
  absl::StatusOr<Id> SharedAtomic(const ir::AtomicOpStmt& s);
  absl::StatusOr<Id> EmitSimt(const ir::SimtOpStmt& s);
  Id push_constants_ = 0;
  Id global_id_ = 0;
  Id num_groups_ = 0;
  Id ctx_ = 0;
  absl::flat_hash_map<uint32_t, Id> ctx_words_;
  absl::flat_hash_map<uint32_t, Id> runtime_words_;
  absl::flat_hash_map<const Stmt*, Id> values_;
  absl::flat_hash_map<const Stmt*, std::vector<Id>> loop_indices_;
  std::vector<LoopTargets> loops_;
  // Conditions of the enclosing `if`s whose then-branch is being emitted:
  // an `if` on one of them takes its then-branch without a branch, which
  // also keeps Mesa's lavapipe (22.3) from miscompiling a loop whose break
  // sits under the same condition.
  std::vector<Id> true_conditions_;
  Id random_state_ = 0;  // Function variable of the task's stream
};

}  // namespace quadrants::codegen::spirv::shader

#endif  // QUADRANTS_CODEGEN_SPIRV_SHADER_EMITTER_INTERNAL_H_
