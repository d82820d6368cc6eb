// qd.simt in SPIR-V: block-shared arrays as Workgroup variables, block
// barriers as OpControlBarrier, and subgroup primitives as
// OpGroupNonUniform* instructions.
#include "quadrants/codegen/spirv/shader_emitter_internal.h"

namespace quadrants::codegen::spirv::shader {
namespace {

using Kind = ir::SimtOpKind;

constexpr uint32_t kAcquireRelease = 0x8;
constexpr uint32_t kUniformMemory = 0x40;
constexpr uint32_t kWorkgroupMemory = 0x100;

}  // namespace

Id ShaderEmitter::Builtin(spv::BuiltIn builtin, bool vector) {
  auto it = builtins_.find(static_cast<uint32_t>(builtin));
  Id variable = 0;
  const Id type = vector ? b_.VectorType(U32(), 3) : U32();
  if (it != builtins_.end()) {
    variable = it->second;
  } else {
    variable = b_.GlobalVariable(b_.PointerType(spv::StorageClassInput, type),
                                 spv::StorageClassInput);
    b_.Decorate(variable, spv::DecorationBuiltIn,
                {static_cast<uint32_t>(builtin)});
    builtins_[static_cast<uint32_t>(builtin)] = variable;
    interface_.push_back(variable);
  }
  Id value = b_.Op(spv::OpLoad, type, {variable});
  if (vector)
    value = b_.Op(spv::OpCompositeExtract, U32(), {value, 0});
  return b_.Op(spv::OpBitcast, I32(), {value});
}

absl::StatusOr<Id> ShaderEmitter::VisitSharedArray(
    const ir::SharedArrayStmt& s) {
  const PrimitiveType t = s.type().element();
  const int width = ir::BitWidth(t);
  SharedArray array;
  // Elements of 16 bits and more are kept as unsigned words of 32 or 64
  // bits, so that atomics of any operation can compare-and-swap them; bytes
  // stay bytes (large byte arrays must fit).
  array.as_word = width >= 16;
  array.word = array.as_word ? b_.IntType(width == 64 ? 64 : 32, false)
                             : StorageType(t);
  const Id type = b_.ArrayType(array.word,
                               static_cast<uint32_t>(s.num_elements()));
  array.variable = b_.GlobalVariable(
      b_.PointerType(spv::StorageClassWorkgroup, type),
      spv::StorageClassWorkgroup);
  interface_.push_back(array.variable);
  shared_bytes_ += s.num_elements() * (width == 16 ? 4 : Bytes(t));
  shared_arrays_[&s] = array;
  return kNoValue;
}

absl::StatusOr<Id> ShaderEmitter::VisitSharedPtr(const ir::SharedPtrStmt& s) {
  // Accesses read the index from here (SharedWordPointer); the statement's
  // own value is the element's pointer.
  return SharedWordPointer(s);
}

Id ShaderEmitter::SharedWordPointer(const ir::SharedPtrStmt& s) {
  const SharedArray& array = shared_arrays_.at(s.array());
  Id index = Cast(Get(s.index()), s.index()->type().element(),
                  PrimitiveType::kI32);
  return b_.Op(spv::OpAccessChain,
               b_.PointerType(spv::StorageClassWorkgroup, array.word),
               {array.variable, index});
}

Id ShaderEmitter::ToSharedWord(const SharedArray& array, Id value,
                               PrimitiveType t) {
  const int width = ir::BitWidth(t);
  Id bits = b_.Op(spv::OpBitcast, b_.IntType(width, false), {value});
  return width == 16 ? b_.Op(spv::OpUConvert, array.word, {bits}) : bits;
}

Id ShaderEmitter::FromSharedWord(const SharedArray& array, Id word,
                                 PrimitiveType t) {
  const int width = ir::BitWidth(t);
  if (width == 16)
    word = b_.Op(spv::OpUConvert, b_.IntType(16, false), {word});
  return b_.Op(spv::OpBitcast, RegType(t), {word});
}

Id ShaderEmitter::LoadShared(const ir::SharedPtrStmt& ptr, PrimitiveType t) {
  const SharedArray& array = shared_arrays_.at(ptr.array());
  Id word = b_.Op(spv::OpLoad, array.word, {Get(&ptr)});
  if (array.as_word)
    return FromSharedWord(array, word, t);
  return t == PrimitiveType::kU1 ? AsBool(word, PrimitiveType::kU8) : word;
}

void ShaderEmitter::StoreShared(const ir::SharedPtrStmt& ptr, Id value,
                                PrimitiveType t) {
  const SharedArray& array = shared_arrays_.at(ptr.array());
  if (array.as_word)
    value = ToSharedWord(array, value, t);
  else if (t == PrimitiveType::kU1)
    value = Cast(value, t, PrimitiveType::kU8);
  b_.OpVoid(spv::OpStore, {Get(&ptr), value});
}

absl::StatusOr<Id> ShaderEmitter::SharedAtomic(const ir::AtomicOpStmt& s) {
  const auto& ptr = static_cast<const ir::SharedPtrStmt&>(*s.ptr());
  const SharedArray& array = shared_arrays_.at(ptr.array());
  const PrimitiveType t = s.type().element();
  const int width = ir::BitWidth(t);
  if (!array.as_word || (width == 64 && !options_.caps.shared_int64_atomics)) {
    return MakeError(
        ErrorKind::kCompilation, s.loc(),
        absl::StrCat("in kernel '", kernel_.name(), "': ", ir::OpName(s.op()),
                     " on a shared array of ", ir::PrimitiveTypeName(t),
                     " is not supported on ", options_.caps.device_name,
                     ": atomics on block-shared memory need 16-bit or wider "
                     "elements",
                     width == 64 ? " (64-bit shared atomics are missing)" : ""));
  }
  if (width == 64)
    b_.Capability(spv::CapabilityInt64Atomics);
  const Id word = array.word;
  const Id pointer = Get(&ptr);
  const Id scope = b_.ConstU32(spv::ScopeWorkgroup);
  const Id relaxed = b_.ConstU32(0);
  Id value = Get(s.value());
  auto to_word = [&](Id v) { return ToSharedWord(array, v, t); };
  auto from_word = [&](Id w) { return FromSharedWord(array, w, t); };
  if (!ir::IsFloat(t) && s.op() != ir::AtomicOpKind::kMul && width >= 32) {
    spv::Op op = spv::OpNop;
    const bool is_signed = ir::IsSigned(t);
    switch (s.op()) {
      case ir::AtomicOpKind::kAdd: op = spv::OpAtomicIAdd; break;
      case ir::AtomicOpKind::kSub: op = spv::OpAtomicISub; break;
      case ir::AtomicOpKind::kMin:
        op = is_signed ? spv::OpAtomicSMin : spv::OpAtomicUMin;
        break;
      case ir::AtomicOpKind::kMax:
        op = is_signed ? spv::OpAtomicSMax : spv::OpAtomicUMax;
        break;
      case ir::AtomicOpKind::kBitAnd: op = spv::OpAtomicAnd; break;
      case ir::AtomicOpKind::kBitOr: op = spv::OpAtomicOr; break;
      case ir::AtomicOpKind::kBitXor: op = spv::OpAtomicXor; break;
      case ir::AtomicOpKind::kExchange: op = spv::OpAtomicExchange; break;
      case ir::AtomicOpKind::kCas:
        return from_word(b_.Op(spv::OpAtomicCompareExchange, word,
                               {pointer, scope, relaxed, relaxed,
                                to_word(value), to_word(Get(s.expected()))}));
      default: break;
    }
    if (op != spv::OpNop) {
      return from_word(
          b_.Op(op, word, {pointer, scope, relaxed, to_word(value)}));
    }
  }
  // Float operations and mul: compare-and-swap on the word.
  Id old_var = b_.LocalVariable(word);
  RetryUntil([&] {
    Id expected = b_.Op(spv::OpAtomicLoad, word, {pointer, scope, relaxed});
    Id desired = to_word(Combine(s.op(), from_word(expected), value, t));
    Id seen = b_.Op(spv::OpAtomicCompareExchange, word,
                    {pointer, scope, relaxed, relaxed, desired, expected});
    b_.OpVoid(spv::OpStore, {old_var, seen});
    return b_.Op(spv::OpIEqual, Bool(), {seen, expected});
  });
  return from_word(b_.Op(spv::OpLoad, word, {old_var}));
}

absl::StatusOr<Id> ShaderEmitter::EmitSimt(const ir::SimtOpStmt& s) {
  const Id subgroup = b_.ConstU32(spv::ScopeSubgroup);
  const Id workgroup = b_.ConstU32(spv::ScopeWorkgroup);
  auto arg = [&](size_t k) { return Get(s.operand(k)); };
  auto arg_type = [&](size_t k) { return s.operand(k)->type().element(); };
  auto to_i32 = [&](Id v) { return b_.Op(spv::OpSelect, I32(), {v, b_.ConstI32(1), b_.ConstI32(0)}); };
  auto predicate = [&](size_t k) {
    return AsBool(arg(k), arg_type(k));
  };
  auto lane = [&](size_t k) { return Cast(arg(k), arg_type(k), PrimitiveType::kU32); };
  auto barrier = [&](Id scope, uint32_t semantics) {
    b_.OpVoid(spv::OpControlBarrier,
              {scope, scope, b_.ConstU32(kAcquireRelease | semantics)});
  };
  // A subgroup operation on a value of any type, moved as u32 words.
  auto by_words = [&](PrimitiveType t, Id v, const std::function<Id(Id)>& op) {
    const int width = ir::BitWidth(t);
    if (width == 64) {
      Id bits = b_.Op(spv::OpBitcast, U64(), {v});
      Id low = op(b_.Op(spv::OpUConvert, U32(), {bits}));
      Id high = op(b_.Op(spv::OpUConvert, U32(),
                         {b_.Op(spv::OpShiftRightLogical, U64(),
                                {bits, b_.ConstU64(32)})}));
      Id joined = b_.Op(
          spv::OpBitwiseOr, U64(),
          {b_.Op(spv::OpUConvert, U64(), {low}),
           b_.Op(spv::OpShiftLeftLogical, U64(),
                 {b_.Op(spv::OpUConvert, U64(), {high}), b_.ConstU64(32)})});
      return b_.Op(spv::OpBitcast, RegType(t), {joined});
    }
    if (width == 32 && !ir::IsBool(t)) {
      return b_.Op(spv::OpBitcast, RegType(t),
                   {op(b_.Op(spv::OpBitcast, U32(), {v}))});
    }
    return Cast(op(Cast(v, t, PrimitiveType::kU32)), PrimitiveType::kU32, t);
  };
  auto shuffle = [&](spv::Op op, spv::Capability capability) {
    b_.Capability(spv::CapabilityGroupNonUniform);
    b_.Capability(capability);
    Id index = lane(1);
    return by_words(arg_type(0), arg(0), [&](Id word) {
      return b_.Op(op, U32(), {subgroup, word, index});
    });
  };
  switch (s.op()) {
    case Kind::kBlockSync:
      barrier(workgroup, kWorkgroupMemory | kUniformMemory);
      return kNoValue;
    case Kind::kBlockSyncAnd:
    case Kind::kBlockSyncOr:
    case Kind::kBlockSyncCount: {
      // A workgroup counter of the threads whose predicate holds, between
      // barriers (the last one lets a later call reset it).
      const Id counter = b_.GlobalVariable(
          b_.PointerType(spv::StorageClassWorkgroup, U32()),
          spv::StorageClassWorkgroup);
      interface_.push_back(counter);
      barrier(workgroup, kWorkgroupMemory);
      If(b_.Op(spv::OpIEqual, Bool(),
               {Builtin(spv::BuiltInLocalInvocationId, true), b_.ConstI32(0)}),
         [&] { b_.OpVoid(spv::OpStore, {counter, b_.ConstU32(0)}); });
      barrier(workgroup, kWorkgroupMemory);
      b_.Op(spv::OpAtomicIAdd, U32(),
            {counter, workgroup, b_.ConstU32(0),
             b_.Op(spv::OpSelect, U32(),
                   {predicate(0), b_.ConstU32(1), b_.ConstU32(0)})});
      barrier(workgroup, kWorkgroupMemory);
      Id count = b_.Op(spv::OpBitcast, I32(),
                       {b_.Op(spv::OpLoad, U32(), {counter})});
      barrier(workgroup, kWorkgroupMemory);
      if (s.op() == Kind::kBlockSyncCount)
        return count;
      Id all = b_.Op(spv::OpIEqual, Bool(),
                     {count, b_.ConstI32(static_cast<int32_t>(block_size_))});
      Id any = b_.Op(spv::OpINotEqual, Bool(), {count, b_.ConstI32(0)});
      return to_i32(s.op() == Kind::kBlockSyncAnd ? all : any);
    }
    case Kind::kBlockMemFence:
      b_.OpVoid(spv::OpMemoryBarrier,
                {workgroup, b_.ConstU32(kAcquireRelease | kWorkgroupMemory |
                                        kUniformMemory)});
      return kNoValue;
    case Kind::kGridMemFence:
      b_.OpVoid(spv::OpMemoryBarrier,
                {b_.ConstU32(spv::ScopeDevice),
                 b_.ConstU32(kAcquireRelease | kUniformMemory)});
      return kNoValue;
    case Kind::kBlockThreadIdx:
      return Builtin(spv::BuiltInLocalInvocationId, true);
    case Kind::kSubgroupSync:
      barrier(subgroup, kWorkgroupMemory | kUniformMemory);
      return kNoValue;
    case Kind::kSubgroupMemFence:
      b_.OpVoid(spv::OpMemoryBarrier,
                {subgroup, b_.ConstU32(kAcquireRelease | kWorkgroupMemory |
                                       kUniformMemory)});
      return kNoValue;
    case Kind::kSubgroupInvocationId:
      b_.Capability(spv::CapabilityGroupNonUniform);
      return Builtin(spv::BuiltInSubgroupLocalInvocationId, false);
    case Kind::kSubgroupShuffle:
    case Kind::kSubgroupBroadcast:
      // A broadcast's lane need not be dynamically uniform here.
      return shuffle(spv::OpGroupNonUniformShuffle,
                     spv::CapabilityGroupNonUniformShuffle);
    case Kind::kSubgroupShuffleXor:
      return shuffle(spv::OpGroupNonUniformShuffleXor,
                     spv::CapabilityGroupNonUniformShuffle);
    case Kind::kSubgroupShuffleUp:
      return shuffle(spv::OpGroupNonUniformShuffleUp,
                     spv::CapabilityGroupNonUniformShuffleRelative);
    case Kind::kSubgroupShuffleDown:
      return shuffle(spv::OpGroupNonUniformShuffleDown,
                     spv::CapabilityGroupNonUniformShuffleRelative);
    case Kind::kSubgroupBroadcastFirst:
      b_.Capability(spv::CapabilityGroupNonUniform);
      b_.Capability(spv::CapabilityGroupNonUniformBallot);
      return by_words(arg_type(0), arg(0), [&](Id word) {
        return b_.Op(spv::OpGroupNonUniformBroadcastFirst, U32(),
                     {subgroup, word});
      });
    case Kind::kSubgroupElect:
      b_.Capability(spv::CapabilityGroupNonUniform);
      return to_i32(b_.Op(spv::OpGroupNonUniformElect, Bool(), {subgroup}));
    case Kind::kSubgroupBallot: {
      b_.Capability(spv::CapabilityGroupNonUniform);
      b_.Capability(spv::CapabilityGroupNonUniformBallot);
      Id mask = b_.Op(spv::OpGroupNonUniformBallot, b_.VectorType(U32(), 4),
                      {subgroup, predicate(0)});
      Id low = b_.Op(spv::OpUConvert, U64(),
                     {b_.Op(spv::OpCompositeExtract, U32(), {mask, 0})});
      Id high = b_.Op(spv::OpUConvert, U64(),
                      {b_.Op(spv::OpCompositeExtract, U32(), {mask, 1})});
      Id bits = b_.Op(spv::OpBitwiseOr, U64(),
                      {low, b_.Op(spv::OpShiftLeftLogical, U64(),
                                  {high, b_.ConstU64(32)})});
      return Cast(bits, PrimitiveType::kU64, s.type().element());
    }
    case Kind::kSubgroupAll:
    case Kind::kSubgroupAny:
      b_.Capability(spv::CapabilityGroupNonUniform);
      b_.Capability(spv::CapabilityGroupNonUniformVote);
      return to_i32(b_.Op(s.op() == Kind::kSubgroupAll
                              ? spv::OpGroupNonUniformAll
                              : spv::OpGroupNonUniformAny,
                          Bool(), {subgroup, predicate(0)}));
    case Kind::kSubgroupAllEqual:
      b_.Capability(spv::CapabilityGroupNonUniform);
      b_.Capability(spv::CapabilityGroupNonUniformVote);
      return to_i32(b_.Op(spv::OpGroupNonUniformAllEqual, Bool(),
                          {subgroup, arg(0)}));
    default:
      return MakeError(
          ErrorKind::kCompilation, s.loc(),
          absl::StrCat("in kernel '", kernel_.name(), "': qd.simt primitive '",
                       ir::OpName(s.op()),
                       "' is CUDA's (qd.simt.warp); on SPIR-V backends use "
                       "qd.simt.subgroup"));
  }
}

}  // namespace quadrants::codegen::spirv::shader
