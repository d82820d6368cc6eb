#include "quadrants/codegen/spirv/interpreter_builder.h"

#include <vector>

#include "quadrants/codegen/spirv/sizer_bytecode.h"

namespace quadrants::codegen::spirv {
namespace {

constexpr uint32_t kAligned = spv::MemoryAccessAlignedMask;

}  // namespace

Id InterpreterBuilder::Begin(uint32_t local_size, bool invocation_id) {
  b_.Capability(spv::CapabilityShader);
  b_.Capability(spv::CapabilityInt64);
  b_.Capability(spv::CapabilityPhysicalStorageBufferAddresses);
  u32_ = b_.IntType(32, false);
  i32_ = b_.IntType(32, true);
  u64_ = b_.IntType(64, false);
  i64_ = b_.IntType(64, true);
  bool_ = b_.BoolType();
  f32_ = b_.FloatType(32);
  const Id block = b_.StructType({u64_});
  b_.Decorate(block, spv::DecorationBlock);
  b_.MemberDecorate(block, 0, spv::DecorationOffset, {0});
  push_ =
      b_.GlobalVariable(b_.PointerType(spv::StorageClassPushConstant, block),
                        spv::StorageClassPushConstant);
  std::vector<Id> interface = {push_};
  Id global_id = 0;
  const Id uvec3 = invocation_id ? b_.VectorType(u32_, 3) : 0;
  if (invocation_id) {
    global_id = b_.GlobalVariable(b_.PointerType(spv::StorageClassInput, uvec3),
                                  spv::StorageClassInput);
    b_.Decorate(global_id, spv::DecorationBuiltIn,
                {spv::BuiltInGlobalInvocationId});
    interface.push_back(global_id);
  }
  const Id void_type = b_.VoidType();
  main_ = b_.BeginFunction(void_type, b_.FunctionType(void_type, {}), {});
  b_.EntryPoint(main_, "main", interface);
  b_.LocalSize(main_, local_size, 1, 1);
  b_.Name(main_, "main");
  if (invocation_id) {
    Id x = Op(spv::OpCompositeExtract, u32_,
              {Op(spv::OpLoad, uvec3, {global_id}), 0});
    invocation_ = Op(spv::OpBitcast, i64_, {Op(spv::OpUConvert, u64_, {x})});
  }
  Id member = Op(spv::OpAccessChain,
                 b_.PointerType(spv::StorageClassPushConstant, u64_),
                 {push_, b_.ConstU32(0)});
  return Op(spv::OpLoad, u64_, {member});
}

std::vector<uint32_t> InterpreterBuilder::End() {
  b_.Return();
  b_.EndFunction();
  const Id pointer =
      b_.PointerType(spv::StorageClassPhysicalStorageBuffer, u32_);
  for (const auto& [op, function] : atomic_functions_) {
    std::vector<Id> args;
    b_.BeginFunction(u32_, b_.FunctionType(u32_, {pointer, u32_}),
                     {pointer, u32_}, &args, function);
    b_.Decorate(args[0], spv::DecorationAliased);
    Id old =
        Op(op, u32_,
           {args[0], b_.ConstU32(spv::ScopeDevice), b_.ConstU32(0), args[1]});
    b_.OpVoid(spv::OpReturnValue, {old});
    b_.EndFunction();
  }
  return b_.Finish();
}

Id InterpreterBuilder::AtomicU32(spv::Op op, Id addr_u64, Id value) {
  Id function = 0;
  for (const auto& [known, id] : atomic_functions_) {
    if (known == op)
      function = id;
  }
  if (function == 0) {
    function = b_.NewId();
    atomic_functions_.emplace_back(op, function);
  }
  return Op(spv::OpFunctionCall, u32_,
            {function, Pointer(u32_, addr_u64), value});
}

Id InterpreterBuilder::Pointer(Id type, Id addr_u64) {
  return Op(spv::OpConvertUToPtr,
            b_.PointerType(spv::StorageClassPhysicalStorageBuffer, type),
            {addr_u64});
}

Id InterpreterBuilder::Load(Id type, Id addr_u64, uint32_t align) {
  return Op(spv::OpLoad, type, {Pointer(type, addr_u64), kAligned, align});
}

void InterpreterBuilder::Store(Id addr_u64, Id value, Id type, uint32_t align) {
  b_.OpVoid(spv::OpStore, {Pointer(type, addr_u64), value, kAligned, align});
}

Id InterpreterBuilder::Slot(Id array, Id index, int64_t size) {
  Id wrapped = Op(spv::OpBitwiseAnd, i64_, {index, I64(size - 1)});
  return Op(spv::OpAccessChain, b_.PointerType(spv::StorageClassFunction, i64_),
            {array, wrapped});
}

void InterpreterBuilder::WhileLoop(const std::function<Id()>& condition,
                                   const std::function<void()>& body,
                                   const std::function<Id()>& unfinished,
                                   Id cut) {
  Id header = b_.NewId(), first = b_.NewId(), cont = b_.NewId(),
     merge = b_.NewId();
  b_.Branch(header);
  b_.Label(header);
  Id go = condition();
  b_.OpVoid(spv::OpLoopMerge, {merge, cont, spv::LoopControlMaskNone});
  b_.BranchConditional(go, first, merge);
  b_.Label(first);
  body();
  b_.Branch(cont);
  b_.Label(cont);
  b_.Branch(header);
  b_.Label(merge);
  b_.OpVoid(spv::OpStore, {cut, Or(GetBool(cut), unfinished())});
}

Id InterpreterBuilder::ReadTyped(Id addr, Id type) {
  using sizer::kBool;
  using sizer::kF32;
  using sizer::kZero;
  Id base = Op(spv::OpBitwiseAnd, u64_, {addr, b_.ConstU64(~uint64_t{3})});
  Id shift = Op(spv::OpUConvert, u32_,
                {Op(spv::OpShiftLeftLogical, u64_,
                    {Op(spv::OpBitwiseAnd, u64_, {addr, b_.ConstU64(3)}),
                     b_.ConstU64(3)})});
  Id bytes = Op(spv::OpBitwiseAnd, i64_, {type, I64(15)});
  Id is_signed = Op(spv::OpINotEqual, bool_,
                    {Op(spv::OpBitwiseAnd, i64_, {type, I64(16)}), I64(0)});
  Id kind = Op(spv::OpShiftRightArithmetic, i64_, {type, I64(8)});
  Id wide = Eq(bytes, I64(8));
  Id w0 = Load(u32_, base, 4);
  Id w1 = Load(
      u32_,
      Select(u64_, wide, Op(spv::OpIAdd, u64_, {base, b_.ConstU64(4)}), base),
      4);
  Id v64 = Op(spv::OpBitcast, i64_,
              {Op(spv::OpBitwiseOr, u64_,
                  {Op(spv::OpShiftLeftLogical, u64_,
                      {Op(spv::OpUConvert, u64_, {w1}), b_.ConstU64(32)}),
                   Op(spv::OpUConvert, u64_, {w0})})});
  // Narrow integers: shift the element to the top, then back with or
  // without its sign.
  Id x = Op(spv::OpShiftRightLogical, u32_, {w0, shift});
  Id left =
      Op(spv::OpUConvert, u32_,
         {Op(spv::OpBitcast, u64_,
             {Sub(I64(32), Op(spv::OpShiftLeftLogical, i64_,
                              {Select(i64_, wide, I64(4), bytes), I64(3)}))})});
  Id up = Op(spv::OpShiftLeftLogical, u32_, {x, left});
  Id sext = Op(spv::OpSConvert, i64_,
               {Op(spv::OpShiftRightArithmetic, i32_,
                   {Op(spv::OpBitcast, i32_, {up}), left})});
  Id zext = Op(spv::OpBitcast, i64_,
               {Op(spv::OpUConvert, u64_,
                   {Op(spv::OpShiftRightLogical, u32_, {up, left})})});
  Id narrow = Select(i64_, is_signed, sext, zext);
  Id as_int = Select(i64_, wide, v64, narrow);
  Id as_bool = Select(i64_, Eq(as_int, I64(0)), I64(0), I64(1));
  Id as_f32 = Op(spv::OpConvertFToS, i64_, {Op(spv::OpBitcast, f32_, {w0})});
  Id value = Select(i64_, Eq(kind, I64(kBool)), as_bool, as_int);
  value = Select(i64_, Eq(kind, I64(kF32)), as_f32, value);
  return Select(i64_, Eq(kind, I64(kZero)), I64(0), value);
}

}  // namespace quadrants::codegen::spirv
