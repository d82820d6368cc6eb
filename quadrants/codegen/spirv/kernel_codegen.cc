#include "quadrants/codegen/spirv/kernel_codegen.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "quadrants/codegen/spirv/gfx_abi.h"
#include "quadrants/codegen/spirv/math_library.h"
#include "quadrants/codegen/spirv/module_builder.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::spirv {
namespace {

using ir::BinaryOpKind;
using ir::PrimitiveType;
using ir::Stmt;
using ir::StmtKind;
using ir::UnaryOpKind;
using Fn = MathLibrary::Fn;

constexpr uint32_t kAligned = spv::MemoryAccessAlignedMask;

int Bytes(PrimitiveType t) {
  return std::max(1, ir::BitWidth(t) / 8);
}

// Emits one shader of one task.
class ShaderEmitter {
 public:
  ShaderEmitter(const ir::Kernel& kernel, const ir::SNodeTree& snodes,
                const CodegenOptions& options, int task_index,
                std::vector<RuntimeErrorSite>& sites,
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
  // (gfx_abi.h), and the stacks its code allocated.
  void set_ad_record_offset(uint32_t offset) { ad_record_offset_ = offset; }
  std::vector<AdStackInfo> TakeAdStacks() { return std::move(ad_stacks_); }

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
  absl::flat_hash_map<uint32_t, Id> ad_words_;
  absl::flat_hash_map<const Stmt*, AdStack> stacks_;
  absl::flat_hash_map<const Stmt*, bool> adjoint_stacks_;
  bool adjoint_stacks_computed_ = false;
  std::vector<AdStackInfo> ad_stacks_;

  // ---- statements ---------------------------------------------------------
  absl::Status EmitBlock(const ir::Block& block);
  absl::Status EmitStmt(const Stmt& s);
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
  std::vector<std::pair<int, int64_t>> CellAxes(int snode) const;
  std::vector<Id> DecomposeCell(int snode, Id linear);

  const ir::Kernel& kernel_;
  const ir::SNodeTree& snodes_;
  const CodegenOptions& options_;
  int task_index_;
  std::vector<RuntimeErrorSite>& sites_;
  std::vector<ir::PrintSite>& print_sites_;

  ModuleBuilder b_;
  MathLibrary math_{b_};
  Id main_ = 0;
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

// ---- setup ----------------------------------------------------------------

void ShaderEmitter::Begin(uint32_t local_size) {
  b_.Capability(spv::CapabilityShader);
  b_.Capability(spv::CapabilityInt64);
  b_.Capability(spv::CapabilityPhysicalStorageBufferAddresses);
  const Id u64 = U64();
  // Push constants: { u64 ctx }.
  const Id block = b_.StructType({u64});
  b_.Decorate(block, spv::DecorationBlock);
  b_.MemberDecorate(block, 0, spv::DecorationOffset, {0});
  push_constants_ =
      b_.GlobalVariable(b_.PointerType(spv::StorageClassPushConstant, block),
                        spv::StorageClassPushConstant);
  const Id uvec3 = b_.VectorType(U32(), 3);
  const Id input = b_.PointerType(spv::StorageClassInput, uvec3);
  global_id_ = b_.GlobalVariable(input, spv::StorageClassInput);
  b_.Decorate(global_id_, spv::DecorationBuiltIn,
              {spv::BuiltInGlobalInvocationId});
  num_groups_ = b_.GlobalVariable(input, spv::StorageClassInput);
  b_.Decorate(num_groups_, spv::DecorationBuiltIn, {spv::BuiltInNumWorkgroups});
  const Id void_type = b_.VoidType();
  main_ = b_.BeginFunction(void_type, b_.FunctionType(void_type, {}), {});
  b_.EntryPoint(main_, "main", {push_constants_, global_id_, num_groups_});
  b_.LocalSize(main_, local_size, 1, 1);
  b_.Name(main_, "main");
  const Id member = b_.EntryOp(
      spv::OpAccessChain, b_.PointerType(spv::StorageClassPushConstant, u64),
      {push_constants_, b_.ConstU32(0)});
  ctx_ = b_.EntryOp(spv::OpLoad, u64, {member});
}

std::vector<uint32_t> ShaderEmitter::End() {
  if (!b_.terminated())
    b_.Return();
  b_.EndFunction();
  BuildAtomicFunctions();
  math_.Finish();
  return b_.Finish();
}

Id ShaderEmitter::CtxWord(uint32_t offset) {
  auto it = ctx_words_.find(offset);
  if (it != ctx_words_.end())
    return it->second;
  const Id u64 = U64();
  Id addr = offset == 0
                ? ctx_
                : b_.EntryOp(spv::OpIAdd, u64, {ctx_, b_.ConstU64(offset)});
  Id ptr = b_.EntryOp(
      spv::OpConvertUToPtr,
      b_.PointerType(spv::StorageClassPhysicalStorageBuffer, u64), {addr});
  Id value = b_.EntryOp(spv::OpLoad, u64, {ptr, kAligned, 8});
  ctx_words_[offset] = value;
  return value;
}

Id ShaderEmitter::RuntimeWord(uint32_t offset) {
  auto it = runtime_words_.find(offset);
  if (it != runtime_words_.end())
    return it->second;
  const Id u64 = U64();
  Id addr = b_.EntryOp(spv::OpIAdd, u64, {RuntimeAddr(), b_.ConstU64(offset)});
  Id ptr = b_.EntryOp(
      spv::OpConvertUToPtr,
      b_.PointerType(spv::StorageClassPhysicalStorageBuffer, u64), {addr});
  Id value = b_.EntryOp(spv::OpLoad, u64, {ptr, kAligned, 8});
  runtime_words_[offset] = value;
  return value;
}

Id ShaderEmitter::RegType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kU1:
      return b_.BoolType();
    case PrimitiveType::kI8:
      return b_.IntType(8, true);
    case PrimitiveType::kU8:
      return b_.IntType(8, false);
    case PrimitiveType::kI16:
      return b_.IntType(16, true);
    case PrimitiveType::kU16:
      return b_.IntType(16, false);
    case PrimitiveType::kI32:
      return b_.IntType(32, true);
    case PrimitiveType::kU32:
      return b_.IntType(32, false);
    case PrimitiveType::kI64:
      return b_.IntType(64, true);
    case PrimitiveType::kU64:
      return b_.IntType(64, false);
    case PrimitiveType::kF16:
      return b_.FloatType(16);
    case PrimitiveType::kF32:
      return b_.FloatType(32);
    case PrimitiveType::kF64:
      return b_.FloatType(64);
  }
  return b_.IntType(32, true);
}

Id ShaderEmitter::StorageType(PrimitiveType t) {
  return t == PrimitiveType::kU1 ? b_.IntType(8, false) : RegType(t);
}

Id ShaderEmitter::Zero(PrimitiveType t) {
  if (t == PrimitiveType::kU1)
    return b_.ConstBool(false);
  if (ir::IsFloat(t))
    return b_.ConstFloat(RegType(t), 0.0);
  return b_.ConstInt(RegType(t), 0);
}

int ShaderEmitter::AddSite(std::string description, const SourceLocation& loc) {
  sites_.push_back(RuntimeErrorSite{std::move(description), loc, {}});
  return static_cast<int>(sites_.size()) - 1;
}

absl::Status ShaderEmitter::Unsupported(const Stmt& s, absl::string_view what) {
  return MakeError(ErrorKind::kCompilation, s.loc(),
                   absl::StrCat("in kernel '", kernel_.name(), "': ", what,
                                " is not supported by the SPIR-V backends"));
}

absl::Status ShaderEmitter::CheckType(const Stmt& s, PrimitiveType t,
                                      bool in_memory) {
  // Booleans are registers of their own type; only memory needs bytes.
  if (t == PrimitiveType::kU1 && !in_memory)
    return absl::OkStatus();
  std::string missing = options_.caps.MissingFeatureFor(t);
  if (missing.empty())
    return absl::OkStatus();
  return MakeError(
      ErrorKind::kType, s.loc(),
      absl::StrCat("in kernel '", kernel_.name(), "': type ",
                   ir::PrimitiveTypeName(t), " needs ", missing,
                   ", which the Vulkan device '", options_.caps.device_name,
                   "' does not support"));
}

absl::Status ShaderEmitter::CheckTypes(const ir::Block& block) {
  absl::Status status;
  ir::WalkBlock(block, [&](const Stmt* s) {
    if (!status.ok())
      return;
    const ir::DataType type = s->type();
    if (type.is_scalar()) {
      status = CheckType(*s, type.element(), false);
    } else if (type.is_pointer()) {
      const bool global =
          ir::Isa<ir::FieldPtrStmt>(s) || ir::Isa<ir::NdarrayPtrStmt>(s);
      status = CheckType(*s, type.element(), global);
    }
  });
  return status;
}

// ---- values -----------------------------------------------------------------

Id ShaderEmitter::AsBool(Id v, PrimitiveType t) {
  if (t == PrimitiveType::kU1)
    return v;
  if (ir::IsFloat(t))
    return b_.Op(spv::OpFUnordNotEqual, Bool(), {v, Zero(t)});
  return b_.Op(spv::OpINotEqual, Bool(), {v, Zero(t)});
}

Id ShaderEmitter::IntConvert(Id v, PrimitiveType from, PrimitiveType to) {
  const int wf = ir::BitWidth(from), wt = ir::BitWidth(to);
  const bool sf = ir::IsSigned(from), st = ir::IsSigned(to);
  Id r = v;
  if (wf != wt) {
    // Widening extends by the source's signedness; narrowing truncates.
    const bool sign_extend = wt > wf && sf;
    r = b_.Op(sign_extend ? spv::OpSConvert : spv::OpUConvert,
              b_.IntType(wt, sign_extend), {v});
    if (sign_extend != st)
      r = b_.Op(spv::OpBitcast, RegType(to), {r});
    return r;
  }
  return sf == st ? v : b_.Op(spv::OpBitcast, RegType(to), {v});
}

Id ShaderEmitter::Cast(Id v, PrimitiveType from, PrimitiveType to) {
  if (from == to)
    return v;
  if (to == PrimitiveType::kU1)
    return AsBool(v, from);
  const Id target = RegType(to);
  if (from == PrimitiveType::kU1) {
    return b_.Op(
        spv::OpSelect, target,
        {v,
         ir::IsFloat(to) ? b_.ConstFloat(target, 1.0) : b_.ConstInt(target, 1),
         Zero(to)});
  }
  const bool ff = ir::IsFloat(from), ft = ir::IsFloat(to);
  if (ff && ft)
    return b_.Op(spv::OpFConvert, target, {v});
  if (!ff && ft) {
    return b_.Op(ir::IsSigned(from) ? spv::OpConvertSToF : spv::OpConvertUToF,
                 target, {v});
  }
  if (!ff && !ft)
    return IntConvert(v, from, to);
  // Float to integer saturates: out-of-range values clamp and NaN gives 0,
  // as the constant folder and the LLVM backends do.
  const int width = ir::BitWidth(to);
  const bool is_signed = ir::IsSigned(to);
  const double hi =
      is_signed ? std::ldexp(1.0, width - 1) : std::ldexp(1.0, width);
  const double lo = is_signed ? -std::ldexp(1.0, width - 1) : 0.0;
  const Id ftype = RegType(from);
  // Compare in f64 where f32/f16 cannot hold the bound exactly.
  Id x = v;
  Id xt = ftype;
  if (from == PrimitiveType::kF16) {
    xt = b_.FloatType(32);
    x = b_.Op(spv::OpFConvert, xt, {v});
  }
  Id converted =
      b_.Op(is_signed ? spv::OpConvertFToS : spv::OpConvertFToU, target, {x});
  const Id max_value = b_.ConstInt(
      target, is_signed
                  ? (uint64_t{1} << (width - 1)) - 1
                  : (width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1));
  const Id min_value =
      b_.ConstInt(target, is_signed ? ~uint64_t{0} << (width - 1) : 0);
  Id too_high =
      b_.Op(spv::OpFOrdGreaterThanEqual, Bool(), {x, b_.ConstFloat(xt, hi)});
  Id too_low = b_.Op(is_signed ? spv::OpFOrdLessThan : spv::OpFOrdLessThanEqual,
                     Bool(), {x, b_.ConstFloat(xt, lo)});
  Id r = b_.Op(spv::OpSelect, target, {too_high, max_value, converted});
  r = b_.Op(spv::OpSelect, target, {too_low, min_value, r});
  Id nan = b_.Op(spv::OpIsNan, Bool(), {x});
  return b_.Op(spv::OpSelect, target, {nan, Zero(to), r});
}

// ---- control flow
// -------------------------------------------------------------

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
    for (const auto& axis : CellAxes(field_loop->snode_id()))
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

void ShaderEmitter::ReportError(uint32_t code, int site, Id v0, Id v1, Id v2) {
  // The first error wins: whoever swaps the code from 0 writes the rest.
  const Id u32 = U32();
  Id code_ptr = Pointer(u32, AddrAdd(RuntimeAddr(), abi::kRtErrorCode));
  Id previous = Atomic(spv::OpAtomicCompareExchange, u32,
                       {code_ptr, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0),
                        b_.ConstU32(0), b_.ConstU32(code), b_.ConstU32(0)});
  Id first = b_.Op(spv::OpIEqual, Bool(), {previous, b_.ConstU32(0)});
  If(first, [&] {
    Store(AddrAdd(RuntimeAddr(), abi::kRtErrorSite),
          b_.ConstU32(static_cast<uint32_t>(site)), u32, 4);
    Id values[3] = {v0, v1, v2};
    for (int k = 0; k < 3; ++k) {
      Store(AddrAdd(RuntimeAddr(), abi::kRtErrorValues + 8 * k), values[k],
            I64(), 8);
    }
  });
}

// ---- adstack ----------------------------------------------------------------

Id ShaderEmitter::AdWord(uint32_t offset) {
  auto it = ad_words_.find(offset);
  if (it != ad_words_.end())
    return it->second;
  const Id u64 = U64();
  Id addr = b_.EntryOp(
      spv::OpIAdd, u64,
      {CtxWord(abi::kCtxAdStack), b_.ConstU64(ad_record_offset_ + offset)});
  Id ptr = b_.EntryOp(
      spv::OpConvertUToPtr,
      b_.PointerType(spv::StorageClassPhysicalStorageBuffer, u64), {addr});
  Id value = b_.EntryOp(spv::OpLoad, u64, {ptr, kAligned, 8});
  ad_words_[offset] = value;
  return value;
}

Id ShaderEmitter::AdCounter(uint32_t id) {
  return b_.Op(
      spv::OpAccessChain, b_.PointerType(spv::StorageClassFunction, U32()),
      {ad_counters_,
       b_.Op(spv::OpIAdd, U32(), {ad_counter_base_, b_.ConstU32(id)})});
}

bool ShaderEmitter::HasStackAdjoint(const Stmt* stack) {
  if (!adjoint_stacks_computed_) {
    ir::WalkKernel(kernel_, [&](const Stmt* s) {
      if (ir::Isa<ir::AdStackLoadTopAdjStmt>(s) ||
          ir::Isa<ir::AdStackAccAdjointStmt>(s)) {
        adjoint_stacks_[s->operand(0)] = true;
      }
    });
    adjoint_stacks_computed_ = true;
  }
  return adjoint_stacks_.contains(stack);
}

void ShaderEmitter::EmitAdStackAlloca(const ir::AdStackAllocaStmt& s) {
  const Id u64 = U64(), u32 = U32();
  AdStack st;
  st.id = static_cast<uint32_t>(stacks_.size());
  st.dtype = s.dtype();
  const bool is_float = ir::IsFloat(st.dtype);
  const bool wide = ir::BitWidth(st.dtype) == 64;
  // Narrow values widen to 32 bits: heap elements are whole words.
  st.stored = is_float ? (wide ? PrimitiveType::kF64 : PrimitiveType::kF32)
                       : (wide ? PrimitiveType::kI64 : PrimitiveType::kI32);
  st.unit = wide ? 8 : 4;
  // Adjoint slots only where the kernel reads or accumulates adjoints:
  // otherwise pushes move half the bytes.
  st.adjoint = is_float && HasStackAdjoint(&s);
  const bool exact =
      (s.max_size() > 0 || s.size_expr()) && !options_.ad_stack_size_forced;
  st.checked = options_.debug || options_.check_out_of_bound || !exact;
  const uint32_t words = abi::kAdHeaderBytes + abi::kAdStackBytes * st.id;
  Id heap = AdWord(is_float ? abi::kAdFloatHeap : abi::kAdIntHeap);
  Id invocations = AdWord(abi::kAdInvocations);
  Id offset = AdWord(words + abi::kAdStackOffset);
  st.capacity =
      b_.Op(spv::OpUConvert, u32, {AdWord(words + abi::kAdStackCapacity)});
  st.element_stride =
      b_.Op(spv::OpIMul, u64, {invocations, b_.ConstU64(st.unit)});
  st.base = b_.Op(
      spv::OpIAdd, u64,
      {heap,
       b_.Op(spv::OpIAdd, u64,
             {b_.Op(spv::OpIMul, u64, {offset, invocations}),
              b_.Op(spv::OpIMul, u64, {invocation_, b_.ConstU64(st.unit)})})});
  b_.OpVoid(spv::OpStore, {AdCounter(st.id), b_.ConstU32(0)});
  AdStackInfo info;
  info.dtype = st.dtype;
  info.slot_bytes = st.unit * (st.adjoint ? 2 : 1);
  info.static_capacity = s.max_size();
  info.size_expr = s.size_expr();
  info.loc = s.loc();
  ad_stacks_.push_back(std::move(info));
  stacks_[&s] = st;
}

Id ShaderEmitter::AdElement(const AdStack& st, Id slot, bool adjoint) {
  const Id u64 = U64();
  Id element = b_.Op(spv::OpUConvert, u64, {slot});
  if (st.adjoint) {
    element =
        b_.Op(spv::OpIAdd, u64,
              {b_.Op(spv::OpShiftLeftLogical, u64, {element, b_.ConstU64(1)}),
               b_.ConstU64(adjoint ? 1 : 0)});
  }
  return b_.Op(
      spv::OpIAdd, u64,
      {st.base, b_.Op(spv::OpIMul, u64, {element, st.element_stride})});
}

Id ShaderEmitter::AdTop(const AdStack& st) {
  const Id u32 = U32();
  Id count = b_.Op(spv::OpLoad, u32, {AdCounter(st.id)});
  if (!st.checked)
    return b_.Op(spv::OpISub, u32, {count, b_.ConstU32(1)});
  // min(count, capacity) - 1, never below slot 0: an overflowed or empty
  // stack reads a slot of its own slice.
  Id top = b_.Glsl(GLSLstd450UMin, u32, {count, st.capacity});
  return b_.Op(spv::OpISub, u32,
               {top, b_.Glsl(GLSLstd450UMin, u32, {top, b_.ConstU32(1)})});
}

void ShaderEmitter::EmitAdStackPush(const ir::AdStackPushStmt& s) {
  const AdStack& st = stacks_.at(s.stack());
  const Id u32 = U32();
  Id counter = AdCounter(st.id);
  Id count = b_.Op(spv::OpLoad, u32, {counter});
  // Checked pushes clamp to the last slot and record the overflow through
  // selects and one atomic maximum: no branch per push.
  Id slot = st.checked ? b_.Glsl(GLSLstd450UMin, u32,
                                 {count, b_.Op(spv::OpISub, u32,
                                               {st.capacity, b_.ConstU32(1)})})
                       : count;
  const Id type = RegType(st.stored);
  Store(AdElement(st, slot, false), Cast(Get(s.value()), st.dtype, st.stored),
        type, st.unit);
  if (st.adjoint)
    Store(AdElement(st, slot, true), Zero(st.stored), type, st.unit);
  Id next = b_.Op(spv::OpIAdd, u32, {count, b_.ConstU32(1)});
  b_.OpVoid(spv::OpStore, {counter, next});
  if (st.checked) {
    const uint32_t code =
        (static_cast<uint32_t>(task_index_) << 16) + st.id + 1;
    Id signal = b_.Op(spv::OpSelect, u32,
                      {b_.Op(spv::OpUGreaterThan, Bool(), {next, st.capacity}),
                       b_.ConstU32(code), b_.ConstU32(0)});
    Id word = Pointer(u32, AddrAdd(RuntimeAddr(), abi::kRtAdStackOverflow));
    Atomic(spv::OpAtomicUMax, u32,
           {word, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0), signal});
  }
}

void ShaderEmitter::EmitAdStackPop(const ir::AdStackPopStmt& s) {
  const AdStack& st = stacks_.at(s.stack());
  const Id u32 = U32();
  Id counter = AdCounter(st.id);
  Id count = b_.Op(spv::OpLoad, u32, {counter});
  Id decrement = st.checked
                     ? b_.Glsl(GLSLstd450UMin, u32, {count, b_.ConstU32(1)})
                     : b_.ConstU32(1);
  b_.OpVoid(spv::OpStore,
            {counter, b_.Op(spv::OpISub, u32, {count, decrement})});
}

// ---- tasks ------------------------------------------------------------------

absl::StatusOr<std::vector<uint32_t>> ShaderEmitter::EmitTask(
    const ir::OffloadedTaskStmt& task) {
  if (absl::Status s = CheckTypes(*task.body()); !s.ok())
    return s;
  const bool serial = task.task_kind() == ir::TaskKind::kSerial;
  Begin(serial ? 1 : abi::kBlockSize);
  bool draws = false;
  ir::WalkBlock(*task.body(), [&](const Stmt* s) {
    draws = draws || ir::Isa<ir::RandomStmt>(s);
  });
  if (draws)
    random_state_ = b_.LocalVariable(U64());
  ir::WalkBlock(*task.body(), [&](const Stmt* s) {
    ad_num_stacks_ += ir::Isa<ir::AdStackAllocaStmt>(s) ? 1 : 0;
  });
  if (ad_num_stacks_ > 0) {
    ad_counters_ = b_.LocalVariable(b_.ArrayType(U32(), ad_num_stacks_));
    // Counters are indexed from a base read from memory (always 0: the
    // invocation count is below 2^63): with constant indices SPIRV-Tools'
    // scalar replacement would split the array into one variable per
    // stack, and then a phi per stack at every loop header.
    Id high = b_.EntryOp(spv::OpShiftRightLogical, U64(),
                         {AdWord(abi::kAdInvocations), b_.ConstU64(63)});
    ad_counter_base_ = b_.EntryOp(spv::OpUConvert, U32(), {high});
  }
  absl::Status status;
  if (serial) {
    invocation_ = b_.ConstU64(0);
    loops_.push_back({0, 0});
    SeedRandom(b_.ConstI64(0));
    status = EmitBlock(*task.body());
  } else {
    // Grid-stride: invocation g runs iterations begin + g, + stride, ...
    const Id u32 = U32(), i64 = I64();
    const Id uvec3 = b_.VectorType(u32, 3);
    Id gid = b_.Op(spv::OpCompositeExtract, u32,
                   {b_.Op(spv::OpLoad, uvec3, {global_id_}), 0});
    Id groups = b_.Op(spv::OpCompositeExtract, u32,
                      {b_.Op(spv::OpLoad, uvec3, {num_groups_}), 0});
    Id stride = b_.Op(
        spv::OpIMul, i64,
        {b_.Op(spv::OpBitcast, i64, {b_.Op(spv::OpUConvert, U64(), {groups})}),
         b_.ConstI64(abi::kBlockSize)});
    invocation_ = b_.Op(spv::OpUConvert, U64(), {gid});
    Id offset = b_.Op(spv::OpBitcast, i64, {invocation_});
    Id begin, end;
    if (task.task_kind() == ir::TaskKind::kRangeFor) {
      Id record =
          AddrAdd(CtxWord(abi::kCtxBounds),
                  static_cast<uint64_t>(task_index_) * abi::kRangeBytes);
      begin = Load(i64, AddrAdd(record, abi::kRangeBegin), 8);
      end = Load(i64, AddrAdd(record, abi::kRangeEnd), 8);
    } else {
      int64_t cells = 1;
      for (const auto& axis : CellAxes(task.snode_id()))
        cells *= axis.second;
      begin = b_.ConstI64(0);
      end = b_.ConstI64(cells);
    }
    Id first = b_.Op(spv::OpIAdd, i64, {begin, offset});
    if (ad_num_stacks_ > 0) {
      // The heaps hold slices for the record's invocations only: those
      // past them idle and the rest stride over the range in their place.
      Id sliced = b_.Op(spv::OpBitcast, i64, {AdWord(abi::kAdInvocations)});
      stride = b_.Op(spv::OpSelect, i64,
                     {b_.Op(spv::OpSGreaterThan, Bool(), {stride, sliced}),
                      sliced, stride});
      first = b_.Op(
          spv::OpSelect, i64,
          {b_.Op(spv::OpSLessThan, Bool(), {offset, sliced}), first, end});
    }
    status = CountedLoop(first, end, stride, [&](Id i) {
      if (task.task_kind() == ir::TaskKind::kRangeFor) {
        const PrimitiveType index_type = task.begin()->type().element();
        loop_indices_[&task] = {Cast(i, PrimitiveType::kI64, index_type)};
      } else {
        loop_indices_[&task] = DecomposeCell(task.snode_id(), i);
      }
      SeedRandom(i);
      return EmitBlock(*task.body());
    });
  }
  if (!status.ok())
    return status;
  return End();
}

absl::StatusOr<std::vector<uint32_t>> ShaderEmitter::EmitBounds(
    const ir::OffloadedTaskStmt& task) {
  if (absl::Status s = CheckTypes(*task.prologue()); !s.ok())
    return s;
  Begin(1);
  loops_.push_back({0, 0});
  if (absl::Status s = EmitBlock(*task.prologue()); !s.ok())
    return s;
  const PrimitiveType t = task.begin()->type().element();
  const Id i64 = I64(), u32 = U32();
  Id begin = ToI64(Get(task.begin()), t);
  Id end = ToI64(Get(task.end()), t);
  Id record = AddrAdd(CtxWord(abi::kCtxBounds),
                      static_cast<uint64_t>(task_index_) * abi::kRangeBytes);
  Store(AddrAdd(record, abi::kRangeBegin), begin, i64, 8);
  Store(AddrAdd(record, abi::kRangeEnd), end, i64, 8);
  // Workgroups: enough for one iteration per invocation, at most the
  // context's cap (the loop covers the rest grid-stride), none for an empty
  // range.
  Id count = b_.Op(spv::OpISub, i64, {end, begin});
  count = b_.Op(spv::OpSelect, i64,
                {b_.Op(spv::OpSLessThan, Bool(), {count, b_.ConstI64(0)}),
                 b_.ConstI64(0), count});
  Id groups =
      b_.Op(spv::OpSDiv, i64,
            {b_.Op(spv::OpIAdd, i64, {count, b_.ConstI64(abi::kBlockSize - 1)}),
             b_.ConstI64(abi::kBlockSize)});
  Id cap = b_.Op(spv::OpBitcast, i64, {CtxWord(abi::kCtxMaxGroups)});
  bool stacks = false;
  ir::WalkBlock(*task.body(), [&](const Stmt* s) {
    stacks = stacks || ir::Isa<ir::AdStackAllocaStmt>(s);
  });
  if (stacks) {
    // The adstack heaps hold slices for this many invocations only.
    Id sliced =
        b_.Op(spv::OpSDiv, i64,
              {b_.Op(spv::OpIAdd, i64,
                     {b_.Op(spv::OpBitcast, i64, {AdWord(abi::kAdInvocations)}),
                      b_.ConstI64(abi::kBlockSize - 1)}),
               b_.ConstI64(abi::kBlockSize)});
    cap =
        b_.Op(spv::OpSelect, i64,
              {b_.Op(spv::OpSGreaterThan, Bool(), {cap, sliced}), sliced, cap});
  }
  groups =
      b_.Op(spv::OpSelect, i64,
            {b_.Op(spv::OpSGreaterThan, Bool(), {groups, cap}), cap, groups});
  Id groups32 =
      b_.Op(spv::OpUConvert, u32, {b_.Op(spv::OpBitcast, U64(), {groups})});
  Store(AddrAdd(record, abi::kRangeDispatch), groups32, u32, 4);
  Store(AddrAdd(record, abi::kRangeDispatch + 4), b_.ConstU32(1), u32, 4);
  Store(AddrAdd(record, abi::kRangeDispatch + 8), b_.ConstU32(1), u32, 4);
  return End();
}

std::vector<std::pair<int, int64_t>> ShaderEmitter::CellAxes(int snode) const {
  std::vector<std::pair<int, int64_t>> axes;
  for (int id = snode; id >= 0; id = snodes_.node(id).parent) {
    const ir::SNode& node = snodes_.node(id);
    for (size_t k = 0; k < node.axes.size(); ++k)
      axes.emplace_back(node.axes[k], node.sizes[k]);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

std::vector<Id> ShaderEmitter::DecomposeCell(int snode, Id linear) {
  auto axes = CellAxes(snode);
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

// ---- statements
// ---------------------------------------------------------------

absl::Status ShaderEmitter::EmitBlock(const ir::Block& block) {
  return EmitStatements(block, 0);
}

absl::Status ShaderEmitter::EmitStatements(const ir::Block& block,
                                           size_t first) {
  for (size_t k = first; k < block.size(); ++k) {
    const Stmt* stmt = block.at(k);
    if (absl::Status s = EmitStmt(*stmt); !s.ok())
      return s;
    // Code after a jump is dead; structured control flow has no block for
    // it, so it is not emitted.
    if (ir::Isa<ir::BreakStmt>(stmt) || ir::Isa<ir::ContinueStmt>(stmt))
      break;
    if (b_.terminated())
      break;
    // After a statement that may have set the continue flag, the rest of
    // the block runs only when it did not.
    if (k + 1 < block.size() && HasFlaggedContinue(stmt)) {
      Id flag = loops_.back().continue_flag;
      Id go_on = b_.Op(spv::OpLogicalNot, Bool(),
                       {b_.Op(spv::OpLoad, Bool(), {flag})});
      absl::Status status;
      If(go_on, [&] { status = EmitStatements(block, k + 1); });
      return status;
    }
  }
  return absl::OkStatus();
}

Id ShaderEmitter::EmitConst(const ir::ConstStmt& s) {
  const ir::Constant& c = s.value();
  const PrimitiveType t = c.type();
  if (t == PrimitiveType::kU1)
    return b_.ConstBool(c.as_uint() != 0);
  if (c.is_float())
    return b_.ConstFloat(RegType(t), c.as_float());
  return b_.ConstInt(RegType(t), c.as_uint());
}

Id ShaderEmitter::EmitArgLoad(const ir::ArgLoadStmt& s) {
  Id slot = CtxWord(abi::kCtxArgs + 8 * s.arg());
  const PrimitiveType t = s.type().element();
  switch (t) {
    case PrimitiveType::kF64:
      return b_.Op(spv::OpBitcast, RegType(t), {slot});
    case PrimitiveType::kF32:
      return b_.Op(spv::OpBitcast, RegType(t),
                   {b_.Op(spv::OpUConvert, U32(), {slot})});
    case PrimitiveType::kF16:
      return b_.Op(spv::OpBitcast, RegType(t),
                   {b_.Op(spv::OpUConvert, b_.IntType(16, false), {slot})});
    case PrimitiveType::kU1:
      return b_.Op(spv::OpINotEqual, Bool(), {slot, b_.ConstU64(0)});
    default:
      return IntConvert(slot, PrimitiveType::kU64, t);
  }
}

void ShaderEmitter::CheckIndex(Id* valid, int site, int axis, Id index,
                               Id extent) {
  if (*valid == 0)
    return;
  // Unsigned comparison covers both ends (a negative index is huge).
  Id ok = b_.Op(spv::OpULessThan, Bool(),
                {b_.Op(spv::OpBitcast, U64(), {index}),
                 b_.Op(spv::OpBitcast, U64(), {extent})});
  If(b_.Op(spv::OpLogicalNot, Bool(), {ok}), [&] {
    ReportError(abi::kErrorOutOfBound, site, b_.ConstI64(axis), index, extent);
  });
  *valid = b_.Op(spv::OpLogicalAnd, Bool(), {*valid, ok});
}

Id ShaderEmitter::Guarded(Id valid, Id addr) {
  if (valid == 0)
    return addr;
  return b_.Op(spv::OpSelect, U64(),
               {valid, addr, AddrAdd(RuntimeAddr(), abi::kRtScratch)});
}

Id ShaderEmitter::EmitNdarrayPtr(const ir::NdarrayPtrStmt& s) {
  const ir::KernelParam& param = kernel_.params()[s.arg()];
  int site = -1;
  if (options_.check_out_of_bound) {
    site = AddSite(
        absl::StrCat("ndarray '", param.name, "' (argument ", s.arg(), ")"),
        s.loc());
  }
  const Id i64 = I64();
  Id data = CtxWord(abi::kCtxNdarrayData + 8 * s.arg());
  Id linear = b_.ConstI64(0);
  Id valid = options_.check_out_of_bound ? b_.ConstBool(true) : 0;
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    Id extent = b_.Op(
        spv::OpBitcast, i64,
        {CtxWord(abi::kCtxNdarrayShape +
                 8 * (abi::kMaxNdim * s.arg() + static_cast<uint32_t>(axis)))});
    Id index = ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    CheckIndex(&valid, site, static_cast<int>(axis), index, extent);
    linear = b_.Op(spv::OpIAdd, i64,
                   {b_.Op(spv::OpIMul, i64, {linear, extent}), index});
  }
  Id bytes = b_.Op(spv::OpIMul, i64, {linear, b_.ConstI64(Bytes(param.dtype))});
  return Guarded(valid, AddrPlus(data, b_.Op(spv::OpBitcast, U64(), {bytes})));
}

absl::StatusOr<Id> ShaderEmitter::EmitFieldPtr(const ir::FieldPtrStmt& s) {
  absl::StatusOr<ir::PlaceLayout> layout = snodes_.Layout(s.snode_id());
  if (!layout.ok())
    return layout.status();
  int site = -1;
  if (options_.check_out_of_bound) {
    site = AddSite(
        absl::StrCat("field '", snodes_.node(s.snode_id()).name, "'"), s.loc());
  }
  const Id i64 = I64();
  Id offset = b_.ConstI64(layout->offset);
  Id valid = options_.check_out_of_bound ? b_.ConstBool(true) : 0;
  for (size_t axis = 0; axis < s.num_operands(); ++axis) {
    Id index = ToI64(Get(s.operand(axis)), s.operand(axis)->type().element());
    CheckIndex(&valid, site, static_cast<int>(axis), index,
               b_.ConstI64(layout->shape[axis]));
    offset =
        b_.Op(spv::OpIAdd, i64,
              {offset, b_.Op(spv::OpIMul, i64,
                             {index, b_.ConstI64(layout->axis_stride[axis])})});
  }
  Id root = RuntimeWord(abi::kRtRoot);
  return Guarded(valid, AddrPlus(root, b_.Op(spv::OpBitcast, U64(), {offset})));
}

Id ShaderEmitter::Math(Fn fn, std::vector<Id> args, PrimitiveType t,
                       GLSLstd450 f32_inst) {
  const Id f64 = b_.FloatType(64);
  if (t == PrimitiveType::kF64)
    return math_.Call(fn, args);
  if (options_.caps.float64) {
    // f32 and f16 through the f64 routines, rounded once at the end.
    for (Id& a : args)
      a = b_.Op(spv::OpFConvert, f64, {a});
    return b_.Op(spv::OpFConvert, RegType(t), {math_.Call(fn, args)});
  }
  // Without f64: the driver's f32 instruction (f16 widened to f32).
  const Id f32 = b_.FloatType(32);
  const bool half = t == PrimitiveType::kF16;
  for (Id& a : args) {
    if (half)
      a = b_.Op(spv::OpFConvert, f32, {a});
  }
  Id r;
  if (fn == Fn::kPow) {
    // GLSL pow is undefined for negative bases: take |x|, then the sign an
    // odd integral exponent gives (NaN for other exponents).
    Id ax = b_.Glsl(GLSLstd450FAbs, f32, {args[0]});
    Id magnitude = b_.Glsl(GLSLstd450Pow, f32, {ax, args[1]});
    Id integral = b_.Op(spv::OpFOrdEqual, Bool(),
                        {b_.Glsl(GLSLstd450Floor, f32, {args[1]}), args[1]});
    Id half_y = b_.Op(spv::OpFMul, f32, {args[1], b_.ConstFloat(f32, 0.5)});
    Id odd = b_.Op(spv::OpFOrdNotEqual, Bool(),
                   {b_.Glsl(GLSLstd450Floor, f32, {half_y}), half_y});
    Id negative =
        b_.Op(spv::OpSelect, f32,
              {integral,
               b_.Op(spv::OpSelect, f32,
                     {odd, b_.Op(spv::OpFNegate, f32, {magnitude}), magnitude}),
               b_.ConstFloat(f32, NAN)});
    r = b_.Op(
        spv::OpSelect, f32,
        {b_.Op(spv::OpFOrdLessThan, Bool(), {args[0], b_.ConstFloat(f32, 0.0)}),
         negative, magnitude});
  } else {
    std::vector<uint32_t> operands = {b_.GlslStd450(),
                                      static_cast<uint32_t>(f32_inst)};
    operands.insert(operands.end(), args.begin(), args.end());
    r = b_.Op(spv::OpExtInst, f32, operands);
  }
  return half ? b_.Op(spv::OpFConvert, RegType(t), {r}) : r;
}

absl::StatusOr<Id> ShaderEmitter::EmitUnary(const ir::UnaryOpStmt& s) {
  Id x = Get(s.input());
  const PrimitiveType in = s.input()->type().element();
  const PrimitiveType out = s.type().element();
  const bool is_float = ir::IsFloat(in);
  const Id type = RegType(in);
  switch (s.op()) {
    case UnaryOpKind::kCast:
      return Cast(x, in, out);
    case UnaryOpKind::kNeg:
      if (in == PrimitiveType::kU1)
        return x;  // -True is True in one bit
      return b_.Op(is_float ? spv::OpFNegate : spv::OpSNegate, type, {x});
    case UnaryOpKind::kBitNot:
      if (in == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalNot, Bool(), {x});
      return b_.Op(spv::OpNot, type, {x});
    case UnaryOpKind::kLogicalNot:
      return b_.Op(spv::OpLogicalNot, Bool(), {AsBool(x, in)});
    case UnaryOpKind::kAbs:
      if (is_float)
        return b_.Glsl(GLSLstd450FAbs, type, {x});
      if (!ir::IsSigned(in) || in == PrimitiveType::kU1)
        return x;
      return b_.Op(spv::OpSelect, type,
                   {b_.Op(spv::OpSLessThan, Bool(), {x, Zero(in)}),
                    b_.Op(spv::OpSNegate, type, {x}), x});
    case UnaryOpKind::kStopGrad:
      return x;
    case UnaryOpKind::kFloor:
      return is_float ? b_.Glsl(GLSLstd450Floor, type, {x}) : x;
    case UnaryOpKind::kCeil:
      return is_float ? b_.Glsl(GLSLstd450Ceil, type, {x}) : x;
    case UnaryOpKind::kSqrt:
      return b_.Glsl(GLSLstd450Sqrt, type, {x});
    case UnaryOpKind::kRsqrt:
      return b_.Op(
          spv::OpFDiv, type,
          {b_.ConstFloat(type, 1.0), b_.Glsl(GLSLstd450Sqrt, type, {x})});
    case UnaryOpKind::kSin:
      return Math(Fn::kSin, {x}, in, GLSLstd450Sin);
    case UnaryOpKind::kCos:
      return Math(Fn::kCos, {x}, in, GLSLstd450Cos);
    case UnaryOpKind::kTan:
      return Math(Fn::kTan, {x}, in, GLSLstd450Tan);
    case UnaryOpKind::kTanh:
      return Math(Fn::kTanh, {x}, in, GLSLstd450Tanh);
    case UnaryOpKind::kExp:
      return Math(Fn::kExp, {x}, in, GLSLstd450Exp);
    case UnaryOpKind::kLog:
      return Math(Fn::kLog, {x}, in, GLSLstd450Log);
    case UnaryOpKind::kAsin:
      return Math(Fn::kAsin, {x}, in, GLSLstd450Asin);
    case UnaryOpKind::kAcos:
      return Math(Fn::kAcos, {x}, in, GLSLstd450Acos);
  }
  return Unsupported(s, "this unary op");
}

Id ShaderEmitter::IntDivMod(bool mod, Id x, Id y, PrimitiveType t) {
  // Python semantics: floor division, the remainder takes the divisor's
  // sign; division by zero gives 0 instead of trapping.
  const Id type = RegType(t);
  const Id zero = Zero(t), one = b_.ConstInt(type, 1);
  Id y_zero = b_.Op(spv::OpIEqual, Bool(), {y, zero});
  if (!ir::IsSigned(t)) {
    Id safe = b_.Op(spv::OpSelect, type, {y_zero, one, y});
    Id r = b_.Op(mod ? spv::OpUMod : spv::OpUDiv, type, {x, safe});
    return b_.Op(spv::OpSelect, type, {y_zero, zero, r});
  }
  const Id minus_one = b_.ConstInt(type, ~uint64_t{0});
  Id y_minus_one = b_.Op(spv::OpIEqual, Bool(), {y, minus_one});
  Id special = b_.Op(spv::OpLogicalOr, Bool(), {y_zero, y_minus_one});
  Id safe = b_.Op(spv::OpSelect, type, {special, one, y});
  Id q = b_.Op(spv::OpSDiv, type, {x, safe});
  Id r = b_.Op(spv::OpSRem, type, {x, safe});
  // Adjust where the remainder and the divisor have different signs.
  Id r_nonzero = b_.Op(spv::OpINotEqual, Bool(), {r, zero});
  Id signs_differ = b_.Op(spv::OpLogicalNotEqual, Bool(),
                          {b_.Op(spv::OpSLessThan, Bool(), {r, zero}),
                           b_.Op(spv::OpSLessThan, Bool(), {safe, zero})});
  Id adjust = b_.Op(spv::OpLogicalAnd, Bool(), {r_nonzero, signs_differ});
  if (mod) {
    Id fixed = b_.Op(spv::OpSelect, type,
                     {adjust, b_.Op(spv::OpIAdd, type, {r, safe}), r});
    return b_.Op(spv::OpSelect, type, {special, zero, fixed});
  }
  Id fixed = b_.Op(spv::OpSelect, type,
                   {adjust, b_.Op(spv::OpISub, type, {q, one}), q});
  Id negated = b_.Op(spv::OpSNegate, type, {x});
  return b_.Op(spv::OpSelect, type,
               {y_zero, zero,
                b_.Op(spv::OpSelect, type, {y_minus_one, negated, fixed})});
}

Id ShaderEmitter::MinMax(bool is_min, Id x, Id y, PrimitiveType t) {
  const Id type = RegType(t);
  if (ir::IsFloat(t))
    return b_.Glsl(is_min ? GLSLstd450NMin : GLSLstd450NMax, type, {x, y});
  if (t == PrimitiveType::kU1) {
    return b_.Op(is_min ? spv::OpLogicalAnd : spv::OpLogicalOr, Bool(), {x, y});
  }
  Id less = b_.Op(ir::IsSigned(t) ? spv::OpSLessThan : spv::OpULessThan, Bool(),
                  {x, y});
  return is_min ? b_.Op(spv::OpSelect, type, {less, x, y})
                : b_.Op(spv::OpSelect, type, {less, y, x});
}

Id ShaderEmitter::Compare(BinaryOpKind op, Id x, Id y, PrimitiveType t) {
  const bool f = ir::IsFloat(t), sgn = ir::IsSigned(t);
  if (t == PrimitiveType::kU1) {
    // false < true, as for unsigned integers.
    x = Cast(x, t, PrimitiveType::kU32);
    y = Cast(y, t, PrimitiveType::kU32);
    return Compare(op, x, y, PrimitiveType::kU32);
  }
  spv::Op code = spv::OpNop;
  switch (op) {
    case BinaryOpKind::kLt:
      code =
          f ? spv::OpFOrdLessThan : (sgn ? spv::OpSLessThan : spv::OpULessThan);
      break;
    case BinaryOpKind::kLe:
      code = f ? spv::OpFOrdLessThanEqual
               : (sgn ? spv::OpSLessThanEqual : spv::OpULessThanEqual);
      break;
    case BinaryOpKind::kGt:
      code = f ? spv::OpFOrdGreaterThan
               : (sgn ? spv::OpSGreaterThan : spv::OpUGreaterThan);
      break;
    case BinaryOpKind::kGe:
      code = f ? spv::OpFOrdGreaterThanEqual
               : (sgn ? spv::OpSGreaterThanEqual : spv::OpUGreaterThanEqual);
      break;
    case BinaryOpKind::kEq:
      code = f ? spv::OpFOrdEqual : spv::OpIEqual;
      break;
    default:
      code = f ? spv::OpFUnordNotEqual : spv::OpINotEqual;
      break;
  }
  return b_.Op(code, Bool(), {x, y});
}

absl::StatusOr<Id> ShaderEmitter::EmitBinary(const ir::BinaryOpStmt& s) {
  Id x = Get(s.lhs());
  Id y = Get(s.rhs());
  const PrimitiveType t = s.lhs()->type().element();
  const bool f = ir::IsFloat(t);
  const Id type = RegType(t);
  const bool boolean = t == PrimitiveType::kU1;
  if (boolean &&
      (s.op() == BinaryOpKind::kAdd || s.op() == BinaryOpKind::kSub ||
       s.op() == BinaryOpKind::kMul || s.op() == BinaryOpKind::kFloorDiv ||
       s.op() == BinaryOpKind::kMod || s.op() == BinaryOpKind::kPow ||
       s.op() == BinaryOpKind::kShl || s.op() == BinaryOpKind::kShr)) {
    // One-bit arithmetic, computed in u8 and truncated to its low bit.
    Id a = Cast(x, t, PrimitiveType::kU8), c = Cast(y, t, PrimitiveType::kU8);
    const Id u8 = RegType(PrimitiveType::kU8);
    Id r;
    switch (s.op()) {
      case BinaryOpKind::kAdd:
        r = b_.Op(spv::OpIAdd, u8, {a, c});
        break;
      case BinaryOpKind::kSub:
        r = b_.Op(spv::OpISub, u8, {a, c});
        break;
      case BinaryOpKind::kMul:
        r = b_.Op(spv::OpIMul, u8, {a, c});
        break;
      case BinaryOpKind::kFloorDiv:
        r = IntDivMod(false, a, c, PrimitiveType::kU8);
        break;
      case BinaryOpKind::kMod:
        r = IntDivMod(true, a, c, PrimitiveType::kU8);
        break;
      case BinaryOpKind::kPow:
        r = math_.IntPow(u8, a, c);
        break;
      default:
        r = a;  // shifts of one bit by its width (1) leave it unchanged
        break;
    }
    return b_.Op(spv::OpINotEqual, Bool(),
                 {b_.Op(spv::OpBitwiseAnd, u8, {r, b_.ConstInt(u8, 1)}),
                  b_.ConstInt(u8, 0)});
  }
  switch (s.op()) {
    case BinaryOpKind::kAdd:
      return b_.Op(f ? spv::OpFAdd : spv::OpIAdd, type, {x, y});
    case BinaryOpKind::kSub:
      return b_.Op(f ? spv::OpFSub : spv::OpISub, type, {x, y});
    case BinaryOpKind::kMul:
      return b_.Op(f ? spv::OpFMul : spv::OpIMul, type, {x, y});
    case BinaryOpKind::kDiv:
      return b_.Op(spv::OpFDiv, type, {x, y});
    case BinaryOpKind::kFloorDiv:
      if (f) {
        return b_.Glsl(GLSLstd450Floor, type,
                       {b_.Op(spv::OpFDiv, type, {x, y})});
      }
      return IntDivMod(false, x, y, t);
    case BinaryOpKind::kMod:
      if (f) {
        Id q =
            b_.Glsl(GLSLstd450Floor, type, {b_.Op(spv::OpFDiv, type, {x, y})});
        return b_.Op(spv::OpFSub, type, {x, b_.Op(spv::OpFMul, type, {y, q})});
      }
      return IntDivMod(true, x, y, t);
    case BinaryOpKind::kPow:
      if (f)
        return Math(Fn::kPow, {x, y}, t, GLSLstd450Pow);
      return math_.IntPow(type, x, y);
    case BinaryOpKind::kAtan2:
      return Math(Fn::kAtan2, {x, y}, t, GLSLstd450Atan2);
    case BinaryOpKind::kMin:
      return MinMax(true, x, y, t);
    case BinaryOpKind::kMax:
      return MinMax(false, x, y, t);
    case BinaryOpKind::kBitAnd:
      return boolean ? b_.Op(spv::OpLogicalAnd, Bool(), {x, y})
                     : b_.Op(spv::OpBitwiseAnd, type, {x, y});
    case BinaryOpKind::kBitOr:
      return boolean ? b_.Op(spv::OpLogicalOr, Bool(), {x, y})
                     : b_.Op(spv::OpBitwiseOr, type, {x, y});
    case BinaryOpKind::kBitXor:
      return boolean ? b_.Op(spv::OpLogicalNotEqual, Bool(), {x, y})
                     : b_.Op(spv::OpBitwiseXor, type, {x, y});
    case BinaryOpKind::kShl:
    case BinaryOpKind::kShr: {
      // Shift amounts wrap at the width, as on x86.
      const PrimitiveType yt = s.rhs()->type().element();
      Id amount = b_.Op(spv::OpBitwiseAnd, RegType(yt),
                        {y, b_.ConstInt(RegType(yt), ir::BitWidth(t) - 1)});
      if (s.op() == BinaryOpKind::kShl)
        return b_.Op(spv::OpShiftLeftLogical, type, {x, amount});
      return b_.Op(ir::IsSigned(t) ? spv::OpShiftRightArithmetic
                                   : spv::OpShiftRightLogical,
                   type, {x, amount});
    }
    case BinaryOpKind::kLt:
    case BinaryOpKind::kLe:
    case BinaryOpKind::kGt:
    case BinaryOpKind::kGe:
    case BinaryOpKind::kEq:
    case BinaryOpKind::kNe:
      if (boolean && (s.op() == BinaryOpKind::kEq)) {
        return b_.Op(spv::OpLogicalEqual, Bool(), {x, y});
      }
      if (boolean && (s.op() == BinaryOpKind::kNe)) {
        return b_.Op(spv::OpLogicalNotEqual, Bool(), {x, y});
      }
      return Compare(s.op(), x, y, t);
    case BinaryOpKind::kLogicalAnd:
      return b_.Op(spv::OpLogicalAnd, Bool(), {AsBool(x, t), AsBool(y, t)});
    case BinaryOpKind::kLogicalOr:
      return b_.Op(spv::OpLogicalOr, Bool(), {AsBool(x, t), AsBool(y, t)});
  }
  return Unsupported(s, "this binary op");
}

Id ShaderEmitter::Combine(ir::AtomicOpKind op, Id old, Id value,
                          PrimitiveType t) {
  const Id type = RegType(t);
  const bool f = ir::IsFloat(t);
  switch (op) {
    case ir::AtomicOpKind::kAdd:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalNotEqual, Bool(), {old, value});
      return b_.Op(f ? spv::OpFAdd : spv::OpIAdd, type, {old, value});
    case ir::AtomicOpKind::kSub:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalNotEqual, Bool(), {old, value});
      return b_.Op(f ? spv::OpFSub : spv::OpISub, type, {old, value});
    case ir::AtomicOpKind::kMin:
      return MinMax(true, old, value, t);
    case ir::AtomicOpKind::kMax:
      return MinMax(false, old, value, t);
    case ir::AtomicOpKind::kBitAnd:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalAnd, Bool(), {old, value});
      return b_.Op(spv::OpBitwiseAnd, type, {old, value});
    case ir::AtomicOpKind::kBitOr:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalOr, Bool(), {old, value});
      return b_.Op(spv::OpBitwiseOr, type, {old, value});
    case ir::AtomicOpKind::kBitXor:
      if (t == PrimitiveType::kU1)
        return b_.Op(spv::OpLogicalNotEqual, Bool(), {old, value});
      return b_.Op(spv::OpBitwiseXor, type, {old, value});
  }
  return old;
}

Id ShaderEmitter::CasLoop(Id addr, PrimitiveType t,
                          const std::function<Id(Id)>& update) {
  // The word holding the value: the value itself for 32- and 64-bit types,
  // the aligned 32-bit word around it for narrower ones.
  const int width = ir::BitWidth(t) == 1 ? 8 : ir::BitWidth(t);
  const bool wide = width == 64;
  const Id word_type = wide ? U64() : U32();
  if (wide)
    b_.Capability(spv::CapabilityInt64Atomics);
  const Id u64 = U64();
  Id word_addr = wide || width == 32 ? addr
                                     : b_.Op(spv::OpBitwiseAnd, u64,
                                             {addr, b_.ConstU64(~3ULL)});
  Id shift = 0;
  Id mask = 0;
  if (width < 32) {
    // Bit position of the value in its word (little-endian).
    Id byte = b_.Op(spv::OpUConvert, U32(),
                    {b_.Op(spv::OpBitwiseAnd, u64, {addr, b_.ConstU64(3)})});
    shift = b_.Op(spv::OpIMul, U32(), {byte, b_.ConstU32(8)});
    mask = b_.Op(spv::OpShiftLeftLogical, U32(),
                 {b_.ConstU32((1u << width) - 1), shift});
  }
  const Id uint_type = b_.IntType(width, false);
  const Id storage = StorageType(t);
  auto extract = [&](Id word) -> Id {
    Id bits = word;
    if (width < 32) {
      bits = b_.Op(spv::OpUConvert, uint_type,
                   {b_.Op(spv::OpShiftRightLogical, U32(), {word, shift})});
    }
    Id value =
        storage == uint_type ? bits : b_.Op(spv::OpBitcast, storage, {bits});
    if (t == PrimitiveType::kU1)
      value = AsBool(value, PrimitiveType::kU8);
    return value;
  };
  auto insert = [&](Id word, Id value) -> Id {
    if (t == PrimitiveType::kU1)
      value = Cast(value, t, PrimitiveType::kU8);
    Id bits = storage == uint_type ? value
                                   : b_.Op(spv::OpBitcast, uint_type, {value});
    if (width >= 32)
      return bits;
    Id wide_bits = b_.Op(spv::OpShiftLeftLogical, U32(),
                         {b_.Op(spv::OpUConvert, U32(), {bits}), shift});
    return b_.Op(spv::OpBitwiseOr, U32(),
                 {b_.Op(spv::OpBitwiseAnd, U32(),
                        {word, b_.Op(spv::OpNot, U32(), {mask})}),
                  wide_bits});
  };
  Id ptr = Pointer(word_type, word_addr);
  Id old_var = b_.LocalVariable(word_type);
  Id header = b_.NewId(), body = b_.NewId(), latch = b_.NewId(),
     merge = b_.NewId();
  b_.Branch(header);
  b_.Label(header);
  b_.OpVoid(spv::OpLoopMerge, {merge, latch, spv::LoopControlMaskNone});
  b_.Branch(body);
  b_.Label(body);
  Id expected = Atomic(spv::OpAtomicLoad, word_type,
                       {ptr, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0)});
  Id desired = insert(expected, update(extract(expected)));
  Id seen = Atomic(spv::OpAtomicCompareExchange, word_type,
                   {ptr, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0),
                    b_.ConstU32(0), desired, expected});
  b_.OpVoid(spv::OpStore, {old_var, seen});
  Id done = b_.Op(spv::OpIEqual, Bool(), {seen, expected});
  b_.Branch(latch);
  b_.Label(latch);
  b_.BranchConditional(done, merge, header);
  b_.Label(merge);
  return extract(b_.Op(spv::OpLoad, word_type, {old_var}));
}

Id ShaderEmitter::Atomic(spv::Op op, Id type, const std::vector<Id>& operands) {
  // Operand layout: pointer, scope, semantics (two for compare-exchange),
  // then the values.
  const size_t first_value = op == spv::OpAtomicCompareExchange ? 4 : 3;
  std::vector<Id> constants(operands.begin() + 1,
                            operands.begin() + first_value);
  AtomicForm* form = nullptr;
  for (AtomicForm& f : atomic_forms_) {
    if (f.op == op && f.type == type && f.constants == constants)
      form = &f;
  }
  if (form == nullptr) {
    AtomicForm f{op, type, constants, {}, b_.NewId()};
    for (size_t k = first_value; k < operands.size(); ++k)
      f.value_slots.push_back(static_cast<int>(k));
    atomic_forms_.push_back(f);
    form = &atomic_forms_.back();
  }
  std::vector<uint32_t> call = {form->function, operands[0]};
  for (int slot : form->value_slots)
    call.push_back(operands[slot]);
  return b_.Op(spv::OpFunctionCall, type, call);
}

void ShaderEmitter::BuildAtomicFunctions() {
  for (const AtomicForm& form : atomic_forms_) {
    const Id pointer =
        b_.PointerType(spv::StorageClassPhysicalStorageBuffer, form.type);
    std::vector<Id> params = {pointer};
    for (size_t k = 0; k < form.value_slots.size(); ++k)
      params.push_back(form.type);
    std::vector<Id> args;
    b_.BeginFunction(form.type, b_.FunctionType(form.type, params), params,
                     &args, form.function);
    // Other pointers may reach the same memory.
    b_.Decorate(args[0], spv::DecorationAliased);
    std::vector<uint32_t> operands = {args[0]};
    operands.insert(operands.end(), form.constants.begin(),
                    form.constants.end());
    operands.insert(operands.end(), args.begin() + 1, args.end());
    Id result = b_.Op(form.op, form.type, operands);
    b_.OpVoid(spv::OpReturnValue, {result});
    b_.EndFunction();
  }
}

Id ShaderEmitter::SplitWordAtomic(ir::AtomicOpKind op, Id addr, Id value,
                                  PrimitiveType t) {
  // 64-bit integer add, sub and bitwise ops as 32-bit atomics on the two
  // words: bitwise ops act per word, and an add carries into the high word
  // exactly when the low word's add wrapped, so the final value is exact
  // (the returned old value pairs the words each atomic saw).
  const Id u32 = U32(), u64 = U64();
  Id v = b_.Op(spv::OpBitcast, u64, {value});
  if (op == ir::AtomicOpKind::kSub)
    v = b_.Op(spv::OpSNegate, u64, {v});
  Id lo = b_.Op(spv::OpUConvert, u32, {v});
  Id hi = b_.Op(spv::OpUConvert, u32,
                {b_.Op(spv::OpShiftRightLogical, u64, {v, b_.ConstU64(32)})});
  Id lo_ptr = Pointer(u32, addr);
  Id hi_ptr = Pointer(u32, AddrAdd(addr, 4));
  const Id scope = b_.ConstU32(spv::ScopeDevice);
  const Id relaxed = b_.ConstU32(0);
  Id old_lo, old_hi;
  if (op == ir::AtomicOpKind::kAdd || op == ir::AtomicOpKind::kSub) {
    old_lo = Atomic(spv::OpAtomicIAdd, u32, {lo_ptr, scope, relaxed, lo});
    Id sum = b_.Op(spv::OpIAdd, u32, {old_lo, lo});
    Id carry = b_.Op(spv::OpSelect, u32,
                     {b_.Op(spv::OpULessThan, Bool(), {sum, old_lo}),
                      b_.ConstU32(1), b_.ConstU32(0)});
    old_hi =
        Atomic(spv::OpAtomicIAdd, u32,
               {hi_ptr, scope, relaxed, b_.Op(spv::OpIAdd, u32, {hi, carry})});
  } else {
    const spv::Op word_op = op == ir::AtomicOpKind::kBitAnd  ? spv::OpAtomicAnd
                            : op == ir::AtomicOpKind::kBitOr ? spv::OpAtomicOr
                                                             : spv::OpAtomicXor;
    old_lo = Atomic(word_op, u32, {lo_ptr, scope, relaxed, lo});
    old_hi = Atomic(word_op, u32, {hi_ptr, scope, relaxed, hi});
  }
  Id old =
      b_.Op(spv::OpBitwiseOr, u64,
            {b_.Op(spv::OpShiftLeftLogical, u64,
                   {b_.Op(spv::OpUConvert, u64, {old_hi}), b_.ConstU64(32)}),
             b_.Op(spv::OpUConvert, u64, {old_lo})});
  return RegType(t) == u64 ? old : b_.Op(spv::OpBitcast, RegType(t), {old});
}

Id ShaderEmitter::LockedUpdate(Id addr, PrimitiveType t,
                               const std::function<Id(Id)>& update) {
  // One of kNumLocks spin locks, chosen by the address. The loop runs the
  // update in the iteration that takes the lock, so invocations that share
  // a SIMD group and wait for each other still make progress.
  const Id u32 = U32(), u64 = U64();
  Id slot = b_.Op(
      spv::OpUConvert, u32,
      {b_.Op(spv::OpBitwiseAnd, u64,
             {b_.Op(spv::OpShiftRightLogical, u64, {addr, b_.ConstU64(3)}),
              b_.ConstU64(abi::kNumLocks - 1)})});
  Id lock_addr =
      AddrPlus(AddrAdd(RuntimeAddr(), abi::kRtLocks),
               b_.Op(spv::OpUConvert, u64,
                     {b_.Op(spv::OpIMul, u32, {slot, b_.ConstU32(4)})}));
  Id lock = Pointer(u32, lock_addr);
  const Id storage = StorageType(t);
  Id old_var = b_.LocalVariable(RegType(t));
  Id header = b_.NewId(), body = b_.NewId(), latch = b_.NewId(),
     merge = b_.NewId();
  b_.Branch(header);
  b_.Label(header);
  b_.OpVoid(spv::OpLoopMerge, {merge, latch, spv::LoopControlMaskNone});
  b_.Branch(body);
  b_.Label(body);
  Id previous = Atomic(spv::OpAtomicCompareExchange, u32,
                       {lock, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0),
                        b_.ConstU32(0), b_.ConstU32(1), b_.ConstU32(0)});
  Id taken = b_.Op(spv::OpIEqual, Bool(), {previous, b_.ConstU32(0)});
  If(taken, [&] {
    // Volatile: the value may have been written under the lock by another
    // invocation since this one last looked.
    Id ptr = Pointer(storage, addr);
    Id old = b_.Op(spv::OpLoad, storage,
                   {ptr, kAligned | spv::MemoryAccessVolatileMask,
                    static_cast<uint32_t>(Bytes(t))});
    b_.OpVoid(spv::OpStore, {old_var, old});
    b_.OpVoid(spv::OpStore,
              {ptr, update(old), kAligned | spv::MemoryAccessVolatileMask,
               static_cast<uint32_t>(Bytes(t))});
    // Released with a relaxed exchange: with an OpMemoryBarrier and an
    // OpAtomicStore instead, lavapipe loses most updates.
    Atomic(
        spv::OpAtomicExchange, u32,
        {lock, b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0), b_.ConstU32(0)});
  });
  b_.Branch(latch);
  b_.Label(latch);
  b_.BranchConditional(taken, merge, header);
  b_.Label(merge);
  return b_.Op(spv::OpLoad, RegType(t), {old_var});
}

absl::StatusOr<Id> ShaderEmitter::EmitAtomic(const ir::AtomicOpStmt& s) {
  const PrimitiveType t = s.type().element();
  const bool f = ir::IsFloat(t);
  if (f && (s.op() == ir::AtomicOpKind::kBitAnd ||
            s.op() == ir::AtomicOpKind::kBitOr ||
            s.op() == ir::AtomicOpKind::kBitXor)) {
    return MakeError(
        ErrorKind::kType, s.loc(),
        absl::StrCat("in kernel '", kernel_.name(), "': ", ir::OpName(s.op()),
                     " needs an integer target"));
  }
  Id addr = Get(s.ptr());
  Id value = Get(s.value());
  const Id type = RegType(t);
  const int width = ir::BitWidth(t);
  const Id scope = b_.ConstU32(spv::ScopeDevice);
  const Id relaxed = b_.ConstU32(0);
  auto update = [&](Id old) { return Combine(s.op(), old, value, t); };
  // Native float add where the device has it.
  const bool add_like =
      s.op() == ir::AtomicOpKind::kAdd || s.op() == ir::AtomicOpKind::kSub;
  if (f && add_like &&
      ((t == PrimitiveType::kF32 && options_.caps.float32_atomic_add) ||
       (t == PrimitiveType::kF64 && options_.caps.float64_atomic_add))) {
    b_.Extension("SPV_EXT_shader_atomic_float_add");
    b_.Capability(t == PrimitiveType::kF32
                      ? spv::CapabilityAtomicFloat32AddEXT
                      : spv::CapabilityAtomicFloat64AddEXT);
    Id v = s.op() == ir::AtomicOpKind::kSub
               ? b_.Op(spv::OpFNegate, type, {value})
               : value;
    return Atomic(spv::OpAtomicFAddEXT, type,
                  {Pointer(type, addr), scope, relaxed, v});
  }
  const bool native_int =
      !f && (width == 32 || (width == 64 && options_.caps.int64_atomics));
  if (native_int) {
    if (width == 64)
      b_.Capability(spv::CapabilityInt64Atomics);
    spv::Op op = spv::OpNop;
    const bool sgn = ir::IsSigned(t);
    switch (s.op()) {
      case ir::AtomicOpKind::kAdd:
        op = spv::OpAtomicIAdd;
        break;
      case ir::AtomicOpKind::kSub:
        op = spv::OpAtomicISub;
        break;
      case ir::AtomicOpKind::kMin:
        op = sgn ? spv::OpAtomicSMin : spv::OpAtomicUMin;
        break;
      case ir::AtomicOpKind::kMax:
        op = sgn ? spv::OpAtomicSMax : spv::OpAtomicUMax;
        break;
      case ir::AtomicOpKind::kBitAnd:
        op = spv::OpAtomicAnd;
        break;
      case ir::AtomicOpKind::kBitOr:
        op = spv::OpAtomicOr;
        break;
      case ir::AtomicOpKind::kBitXor:
        op = spv::OpAtomicXor;
        break;
    }
    return Atomic(op, type, {Pointer(type, addr), scope, relaxed, value});
  }
  if (width == 64 && !options_.caps.int64_atomics && !f &&
      s.op() != ir::AtomicOpKind::kMin && s.op() != ir::AtomicOpKind::kMax) {
    return SplitWordAtomic(s.op(), addr, value, t);
  }
  if (width == 64 && !options_.caps.int64_atomics)
    return LockedUpdate(addr, t, update);
  return CasLoop(addr, t, update);
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
  for (const auto& axis : CellAxes(s.snode_id()))
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
  Id header = b_.NewId(), body = b_.NewId(), latch = b_.NewId(),
     merge = b_.NewId();
  b_.Branch(header);
  b_.Label(header);
  b_.OpVoid(spv::OpLoopMerge, {merge, latch, spv::LoopControlMaskNone});
  b_.Branch(body);
  b_.Label(body);
  loops_.push_back({latch, merge, &s, flag});
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
    b_.Branch(latch);
  b_.Label(latch);
  b_.Branch(header);
  b_.Label(merge);
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

Id ShaderEmitter::F32BitsAsF64Bits(Id v) {
  // The host reads float values as f64 bits: widen by hand where the device
  // has no f64 (subnormals become zero).
  const Id u64 = U64();
  Id b = b_.Op(spv::OpUConvert, u64, {b_.Op(spv::OpBitcast, U32(), {v})});
  auto bits = [&](uint64_t shift, uint64_t mask) {
    return b_.Op(spv::OpBitwiseAnd, u64,
                 {b_.Op(spv::OpShiftRightLogical, u64, {b, b_.ConstU64(shift)}),
                  b_.ConstU64(mask)});
  };
  Id sign = b_.Op(spv::OpShiftLeftLogical, u64, {bits(31, 1), b_.ConstU64(63)});
  Id exponent = bits(23, 0xff);
  Id mantissa =
      b_.Op(spv::OpShiftLeftLogical, u64, {bits(0, 0x7fffff), b_.ConstU64(29)});
  Id normal =
      b_.Op(spv::OpBitwiseOr, u64,
            {b_.Op(spv::OpShiftLeftLogical, u64,
                   {b_.Op(spv::OpIAdd, u64, {exponent, b_.ConstU64(896)}),
                    b_.ConstU64(52)}),
             mantissa});
  Id special =
      b_.Op(spv::OpBitwiseOr, u64, {b_.ConstU64(0x7ffULL << 52), mantissa});
  Id r = b_.Op(spv::OpSelect, u64,
               {b_.Op(spv::OpIEqual, Bool(), {exponent, b_.ConstU64(255)}),
                special, normal});
  r = b_.Op(spv::OpSelect, u64,
            {b_.Op(spv::OpIEqual, Bool(), {exponent, b_.ConstU64(0)}),
             b_.ConstU64(0), r});
  return b_.Op(spv::OpBitcast, I64(),
               {b_.Op(spv::OpBitwiseOr, u64, {sign, r})});
}

Id ShaderEmitter::AsBits(const Stmt* value) {
  const PrimitiveType t = value->type().element();
  Id v = Get(value);
  if (ir::IsFloat(t)) {
    if (t != PrimitiveType::kF64 && !options_.caps.float64)
      return F32BitsAsF64Bits(Cast(v, t, PrimitiveType::kF32));
    return b_.Op(spv::OpBitcast, I64(), {Cast(v, t, PrimitiveType::kF64)});
  }
  return ToI64(v, t);
}

void ShaderEmitter::EmitAssert(const ir::AssertStmt& s) {
  if (!options_.debug)
    return;
  int site = AddSite(s.message(), s.loc());
  Id values[3] = {b_.ConstI64(0), b_.ConstI64(0), b_.ConstI64(0)};
  for (size_t k = 1; k < s.num_operands() && k <= 3; ++k) {
    sites_[site].value_types.push_back(s.operand(k)->type().element());
    values[k - 1] = AsBits(s.operand(k));
  }
  Id failed = b_.Op(spv::OpLogicalNot, Bool(),
                    {AsBool(Get(s.cond()), s.cond()->type().element())});
  If(failed, [&] {
    ReportError(abi::kErrorAssertion, site, values[0], values[1], values[2]);
  });
}

void ShaderEmitter::EmitPrint(const ir::DebugPrintStmt& s) {
  ir::PrintSite site{s.pieces(), s.specs(), {}, s.loc()};
  const uint32_t count = static_cast<uint32_t>(s.num_operands());
  std::vector<Id> bits;
  for (size_t k = 0; k < count; ++k) {
    site.types.push_back(s.operand(k)->type().element());
    bits.push_back(AsBits(s.operand(k)));
  }
  const int id = static_cast<int>(print_sites_.size());
  print_sites_.push_back(std::move(site));
  // Reserve the record's bytes; records that do not fit are counted.
  const Id u32 = U32();
  const uint32_t bytes = 8 + 8 * count;
  Id rt = RuntimeAddr();
  Id offset = Atomic(
      spv::OpAtomicIAdd, u32,
      {Pointer(u32, AddrAdd(rt, abi::kRtPrintUsed)),
       b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0), b_.ConstU32(bytes)});
  Id capacity = Load(u32, AddrAdd(rt, abi::kRtPrintCapacity), 4);
  Id end = b_.Op(spv::OpIAdd, u32, {offset, b_.ConstU32(bytes)});
  // Reservations only grow, so the records that fit form a prefix; an
  // offset that wrapped around is treated as not fitting.
  Id fits = b_.Op(spv::OpLogicalAnd, Bool(),
                  {b_.Op(spv::OpULessThanEqual, Bool(), {end, capacity}),
                   b_.Op(spv::OpUGreaterThan, Bool(), {end, offset})});
  Id merge = b_.NewId(), write = b_.NewId(), drop = b_.NewId();
  b_.OpVoid(spv::OpSelectionMerge, {merge, spv::SelectionControlMaskNone});
  b_.BranchConditional(fits, write, drop);
  b_.Label(write);
  Id record = AddrPlus(RuntimeWord(abi::kRtPrintBuffer),
                       b_.Op(spv::OpUConvert, U64(), {offset}));
  Store(record, b_.ConstI32(id), I32(), 4);
  Store(AddrAdd(record, 4), b_.ConstI32(static_cast<int32_t>(count)), I32(), 4);
  for (uint32_t k = 0; k < count; ++k)
    Store(AddrAdd(record, 8 + 8 * k), bits[k], I64(), 8);
  b_.Branch(merge);
  b_.Label(drop);
  Atomic(spv::OpAtomicIAdd, u32,
         {Pointer(u32, AddrAdd(rt, abi::kRtPrintDropped)),
          b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0), b_.ConstU32(1)});
  b_.Branch(merge);
  b_.Label(merge);
}

// SplitMix64, as the LLVM runtime: each iteration's stream starts from the
// launch key mixed with the task and the iteration index.
namespace {
Id Mix64(ModuleBuilder& b, Id z) {
  const Id u64 = b.IntType(64, false);
  auto step = [&](Id v, uint64_t shift, uint64_t mul) {
    Id x =
        b.Op(spv::OpBitwiseXor, u64,
             {v, b.Op(spv::OpShiftRightLogical, u64, {v, b.ConstU64(shift)})});
    return mul == 0 ? x : b.Op(spv::OpIMul, u64, {x, b.ConstU64(mul)});
  };
  z = step(z, 30, 0xbf58476d1ce4e5b9ULL);
  z = step(z, 27, 0x94d049bb133111ebULL);
  return step(z, 31, 0);
}
}  // namespace

void ShaderEmitter::SeedRandom(Id iteration) {
  if (random_state_ == 0)
    return;
  const Id u64 = U64();
  Id it = b_.Op(spv::OpBitcast, u64, {iteration});
  Id mixed = Mix64(
      b_, b_.Op(spv::OpBitwiseXor, u64,
                {it, b_.ConstU64(static_cast<uint64_t>(task_index_) << 48)}));
  Id seed = Mix64(
      b_, b_.Op(spv::OpBitwiseXor, u64, {CtxWord(abi::kCtxRandomKey), mixed}));
  b_.OpVoid(spv::OpStore, {random_state_, seed});
}

Id ShaderEmitter::NextRandom() {
  const Id u64 = U64();
  Id state = b_.Op(spv::OpIAdd, u64,
                   {b_.Op(spv::OpLoad, u64, {random_state_}),
                    b_.ConstU64(0x9e3779b97f4a7c15ULL)});
  b_.OpVoid(spv::OpStore, {random_state_, state});
  return Mix64(b_, state);
}

Id ShaderEmitter::EmitRandom(const ir::RandomStmt& s) {
  Id bits = NextRandom();
  const PrimitiveType t = s.type().element();
  const Id u64 = U64();
  auto unit = [&](int precision) {
    // k / 2^p for the top p bits k: exact in the type and never 1.
    Id k = b_.Op(spv::OpShiftRightLogical, u64,
                 {bits, b_.ConstU64(64 - precision)});
    const Id type = RegType(t);
    const Id work = t == PrimitiveType::kF16 ? b_.FloatType(32) : type;
    Id r = b_.Op(spv::OpFMul, work,
                 {b_.Op(spv::OpConvertUToF, work, {k}),
                  b_.ConstFloat(work, std::ldexp(1.0, -precision))});
    return work == type ? r : b_.Op(spv::OpFConvert, type, {r});
  };
  switch (t) {
    case PrimitiveType::kF16:
      return unit(11);
    case PrimitiveType::kF32:
      return unit(24);
    case PrimitiveType::kF64:
      return unit(53);
    case PrimitiveType::kU1:
      return b_.Op(spv::OpSLessThan, Bool(),
                   {b_.Op(spv::OpBitcast, I64(), {bits}), b_.ConstI64(0)});
    default:
      return IntConvert(bits, PrimitiveType::kU64, t);
  }
}

absl::Status ShaderEmitter::EmitStmt(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::kConst:
      values_[&s] = EmitConst(static_cast<const ir::ConstStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kArgLoad:
      values_[&s] = EmitArgLoad(static_cast<const ir::ArgLoadStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kNdarrayShape: {
      const auto& shape = static_cast<const ir::NdarrayShapeStmt&>(s);
      Id word = CtxWord(abi::kCtxNdarrayShape +
                        8 * (abi::kMaxNdim * shape.arg() + shape.axis()));
      values_[&s] = IntConvert(word, PrimitiveType::kU64, PrimitiveType::kI32);
      return absl::OkStatus();
    }
    case StmtKind::kNdarrayPtr:
      values_[&s] = EmitNdarrayPtr(static_cast<const ir::NdarrayPtrStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kFieldPtr: {
      auto ptr = EmitFieldPtr(static_cast<const ir::FieldPtrStmt&>(s));
      if (!ptr.ok())
        return ptr.status();
      values_[&s] = *ptr;
      return absl::OkStatus();
    }
    case StmtKind::kGlobalLoad: {
      const PrimitiveType t = s.type().element();
      Id v = Load(StorageType(t), Get(s.operand(0)),
                  static_cast<uint32_t>(Bytes(t)));
      if (t == PrimitiveType::kU1)
        v = AsBool(v, PrimitiveType::kU8);
      values_[&s] = v;
      return absl::OkStatus();
    }
    case StmtKind::kGlobalStore: {
      const PrimitiveType t = s.operand(1)->type().element();
      Id v = Get(s.operand(1));
      if (t == PrimitiveType::kU1)
        v = Cast(v, t, PrimitiveType::kU8);
      Store(Get(s.operand(0)), v, StorageType(t),
            static_cast<uint32_t>(Bytes(t)));
      return absl::OkStatus();
    }
    case StmtKind::kLocalLoad:
      values_[&s] =
          b_.Op(spv::OpLoad, RegType(s.type().element()), {Get(s.operand(0))});
      return absl::OkStatus();
    case StmtKind::kLocalStore:
      b_.OpVoid(spv::OpStore, {Get(s.operand(0)), Get(s.operand(1))});
      return absl::OkStatus();
    case StmtKind::kAlloca: {
      const PrimitiveType t = s.type().element();
      Id var = b_.LocalVariable(RegType(t));
      b_.OpVoid(spv::OpStore, {var, Zero(t)});
      values_[&s] = var;
      return absl::OkStatus();
    }
    case StmtKind::kUnaryOp: {
      auto v = EmitUnary(static_cast<const ir::UnaryOpStmt&>(s));
      if (!v.ok())
        return v.status();
      values_[&s] = *v;
      return absl::OkStatus();
    }
    case StmtKind::kBinaryOp: {
      auto v = EmitBinary(static_cast<const ir::BinaryOpStmt&>(s));
      if (!v.ok())
        return v.status();
      values_[&s] = *v;
      return absl::OkStatus();
    }
    case StmtKind::kTernaryOp:
      values_[&s] =
          b_.Op(spv::OpSelect, RegType(s.type().element()),
                {AsBool(Get(s.operand(0)), s.operand(0)->type().element()),
                 Get(s.operand(1)), Get(s.operand(2))});
      return absl::OkStatus();
    case StmtKind::kAtomicOp: {
      auto v = EmitAtomic(static_cast<const ir::AtomicOpStmt&>(s));
      if (!v.ok())
        return v.status();
      values_[&s] = *v;
      return absl::OkStatus();
    }
    case StmtKind::kRangeFor:
      return EmitRangeFor(static_cast<const ir::RangeForStmt&>(s));
    case StmtKind::kStructFor:
      return EmitStructFor(static_cast<const ir::StructForStmt&>(s));
    case StmtKind::kLoopIndex: {
      const auto& index = static_cast<const ir::LoopIndexStmt&>(s);
      Id v = loop_indices_.at(index.loop())[index.axis()];
      // Loop indices are i32 (struct_for) or the range's type.
      const Stmt* loop = index.loop();
      PrimitiveType from = PrimitiveType::kI32;
      if (const auto* range = ir::DynCast<ir::RangeForStmt>(loop))
        from = range->begin()->type().element();
      if (const auto* task = ir::DynCast<ir::OffloadedTaskStmt>(loop)) {
        if (task->task_kind() == ir::TaskKind::kRangeFor)
          from = task->begin()->type().element();
      }
      values_[&s] = Cast(v, from, s.type().element());
      return absl::OkStatus();
    }
    case StmtKind::kWhile:
      return EmitWhile(static_cast<const ir::WhileStmt&>(s));
    case StmtKind::kBreak:
    case StmtKind::kContinue: {
      const LoopTargets& loop = loops_.back();
      if (s.kind() == StmtKind::kContinue && loop.continue_flag != 0) {
        // Unrolled: skip the rest of this copy of the body.
        b_.OpVoid(spv::OpStore, {loop.continue_flag, b_.ConstBool(true)});
        return absl::OkStatus();
      }
      Id target =
          s.kind() == StmtKind::kBreak ? loop.break_to : loop.continue_to;
      if (target == 0) {
        b_.Return();  // `continue` at the top of a serial task
      } else {
        b_.Branch(target);
      }
      return absl::OkStatus();
    }
    case StmtKind::kIf:
      return EmitIf(static_cast<const ir::IfStmt&>(s));
    case StmtKind::kAssert:
      EmitAssert(static_cast<const ir::AssertStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kDebugPrint:
      EmitPrint(static_cast<const ir::DebugPrintStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kRandom:
      if (random_state_ == 0)
        return Unsupported(s, "qd.random() outside a task body");
      values_[&s] = EmitRandom(static_cast<const ir::RandomStmt&>(s));
      return absl::OkStatus();
    case StmtKind::kOffloadedTask:
      return Unsupported(s, "a nested offloaded task");
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
      const AdStack& st = stacks_.at(s.operand(0));
      const bool adjoint = s.kind() == StmtKind::kAdStackLoadTopAdj;
      Id v =
          Load(RegType(st.stored), AdElement(st, AdTop(st), adjoint), st.unit);
      values_[&s] = Cast(v, st.stored, st.dtype);
      return absl::OkStatus();
    }
    case StmtKind::kAdStackAccAdjoint: {
      const AdStack& st = stacks_.at(s.operand(0));
      const Id type = RegType(st.stored);
      Id addr = AdElement(st, AdTop(st), true);
      Id sum = b_.Op(spv::OpFAdd, type,
                     {Load(type, addr, st.unit),
                      Cast(Get(s.operand(1)), st.dtype, st.stored)});
      Store(addr, sum, type, st.unit);
      return absl::OkStatus();
    }
  }
  return Unsupported(s, "this statement");
}

}  // namespace

std::string CodegenOptions::ToString() const {
  return absl::StrCat("bounds=", check_out_of_bound, " debug=", debug,
                      " forced=", ad_stack_size_forced, " ", caps.ToString());
}

absl::StatusOr<SpirvKernel> GenerateSpirv(const ir::Kernel& kernel,
                                          const ir::SNodeTree& snodes,
                                          const CodegenOptions& options) {
  SpirvKernel out;
  uint32_t ad_record_offset = 0;
  for (size_t t = 0; t < kernel.body()->size(); ++t) {
    const auto* task = ir::DynCast<ir::OffloadedTaskStmt>(kernel.body()->at(t));
    if (task == nullptr) {
      return MakeError(
          ErrorKind::kCompilation,
          absl::StrCat("kernel '", kernel.name(),
                       "' must be offloaded before code generation"));
    }
    SpirvTask spirv_task;
    spirv_task.kind = task->task_kind();
    spirv_task.loc = task->loc();
    {
      ShaderEmitter emitter(kernel, snodes, options, static_cast<int>(t),
                            out.error_sites, out.print_sites);
      emitter.set_ad_record_offset(ad_record_offset);
      absl::StatusOr<std::vector<uint32_t>> code = emitter.EmitTask(*task);
      if (!code.ok())
        return code.status();
      spirv_task.code = *std::move(code);
      spirv_task.ad_stacks = emitter.TakeAdStacks();
    }
    if (task->task_kind() == ir::TaskKind::kRangeFor) {
      ShaderEmitter emitter(kernel, snodes, options, static_cast<int>(t),
                            out.error_sites, out.print_sites);
      emitter.set_ad_record_offset(ad_record_offset);
      absl::StatusOr<std::vector<uint32_t>> code = emitter.EmitBounds(*task);
      if (!code.ok())
        return code.status();
      spirv_task.bounds_code = *std::move(code);
    }
    if (task->task_kind() == ir::TaskKind::kStructFor) {
      spirv_task.struct_for_cells = 1;
      for (int id = task->snode_id(); id >= 0; id = snodes.node(id).parent) {
        for (int64_t size : snodes.node(id).sizes)
          spirv_task.struct_for_cells *= size;
      }
    }
    if (!spirv_task.ad_stacks.empty()) {
      ad_record_offset += abi::AdRecordBytes(
          static_cast<uint32_t>(spirv_task.ad_stacks.size()));
    }
    out.tasks.push_back(std::move(spirv_task));
  }
  return out;
}

}  // namespace quadrants::spirv
