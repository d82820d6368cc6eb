// GenerateSpirv: each offloaded task through ShaderEmitter
// (shader_emitter_internal.h); here the shader's setup, the task and
// bounds shaders, and the dispatch of statements.
#include "quadrants/codegen/spirv/kernel_codegen.h"

#include <cstring>

#include "quadrants/codegen/spirv/shader_emitter_internal.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::spirv::shader {

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

Id ShaderEmitter::EntryWord(absl::flat_hash_map<uint32_t, Id>& words,
                            uint32_t offset,
                            const std::function<Id()>& address) {
  auto it = words.find(offset);
  if (it != words.end())
    return it->second;
  const Id u64 = U64();
  Id addr = address();
  Id ptr = b_.EntryOp(
      spv::OpConvertUToPtr,
      b_.PointerType(spv::StorageClassPhysicalStorageBuffer, u64), {addr});
  Id value = b_.EntryOp(spv::OpLoad, u64, {ptr, kAligned, 8});
  words[offset] = value;
  return value;
}

Id ShaderEmitter::CtxWord(uint32_t offset) {
  return EntryWord(ctx_words_, offset, [&] {
    return offset == 0
               ? ctx_
               : b_.EntryOp(spv::OpIAdd, U64(), {ctx_, b_.ConstU64(offset)});
  });
}

Id ShaderEmitter::RuntimeWord(uint32_t offset) {
  return EntryWord(runtime_words_, offset, [&] {
    return b_.EntryOp(spv::OpIAdd, U64(), {RuntimeAddr(), b_.ConstU64(offset)});
  });
}

int ShaderEmitter::AddSite(std::string description, const SourceLocation& loc) {
  sites_.push_back(ErrorSite{std::move(description), loc, {}});
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

// ---- statements ---------------------------------------------------------

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

// The first word of every SPIR-V module.
constexpr uint32_t kSpirvMagic = 0x07230203;

std::string PackModules(const std::vector<SpirvTask>& tasks) {
  std::string out;
  auto put = [&](const std::vector<uint32_t>& words) {
    const uint32_t count = static_cast<uint32_t>(words.size());
    out.append(reinterpret_cast<const char*>(&count), 4);
    out.append(reinterpret_cast<const char*>(words.data()), 4 * words.size());
  };
  for (const SpirvTask& task : tasks) {
    put(task.code);
    put(task.bounds_code);
  }
  return out;
}

absl::StatusOr<std::vector<SpirvTask>> UnpackModules(absl::string_view binary,
                                                     size_t num_tasks) {
  std::vector<SpirvTask> tasks(num_tasks);
  size_t at = 0;
  for (size_t k = 0; k < 2 * num_tasks; ++k) {
    uint32_t count = 0;
    if (at + 4 > binary.size())
      return absl::DataLossError("truncated SPIR-V module list");
    std::memcpy(&count, binary.data() + at, 4);
    at += 4;
    if (count > (binary.size() - at) / 4)
      return absl::DataLossError("truncated SPIR-V module");
    const bool bounds = k % 2 == 1;
    std::vector<uint32_t>& words =
        bounds ? tasks[k / 2].bounds_code : tasks[k / 2].code;
    words.resize(count);
    std::memcpy(words.data(), binary.data() + at, 4 * size_t{count});
    at += 4 * size_t{count};
    if ((!bounds || count > 0) && (count < 5 || words[0] != kSpirvMagic))
      return absl::DataLossError("not a SPIR-V module");
  }
  if (at != binary.size())
    return absl::DataLossError("trailing bytes after the SPIR-V modules");
  return tasks;
}

}  // namespace quadrants::spirv::shader

namespace quadrants::spirv {

using shader::ShaderEmitter;

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
    CompiledTask compiled;
    compiled.kind = task->task_kind();
    compiled.loc = task->loc();
    compiled.function = "main";
    {
      ShaderEmitter emitter(kernel, snodes, options, static_cast<int>(t),
                            out.data.error_sites, out.data.print_sites);
      emitter.set_ad_record_offset(ad_record_offset);
      QD_ASSIGN_OR_RETURN(spirv_task.code, emitter.EmitTask(*task));
      compiled.ad_stacks = emitter.TakeAdStacks();
    }
    if (task->task_kind() == ir::TaskKind::kRangeFor) {
      ShaderEmitter emitter(kernel, snodes, options, static_cast<int>(t),
                            out.data.error_sites, out.data.print_sites);
      emitter.set_ad_record_offset(ad_record_offset);
      QD_ASSIGN_OR_RETURN(spirv_task.bounds_code, emitter.EmitBounds(*task));
      compiled.bounds_function = "main";
    }
    if (task->task_kind() == ir::TaskKind::kStructFor) {
      compiled.struct_for_cells = 1;
      for (int id = task->snode_id(); id >= 0; id = snodes.node(id).parent) {
        for (int64_t size : snodes.node(id).sizes)
          compiled.struct_for_cells *= size;
      }
    }
    if (!compiled.ad_stacks.empty()) {
      ad_record_offset += abi::AdRecordBytes(
          static_cast<uint32_t>(compiled.ad_stacks.size()));
    }
    out.tasks.push_back(std::move(spirv_task));
    out.data.tasks.push_back(std::move(compiled));
  }
  return out;
}

// The first word of every SPIR-V module.
constexpr uint32_t kSpirvMagic = 0x07230203;

std::string PackModules(const std::vector<SpirvTask>& tasks) {
  std::string out;
  auto put = [&](const std::vector<uint32_t>& words) {
    const uint32_t count = static_cast<uint32_t>(words.size());
    out.append(reinterpret_cast<const char*>(&count), 4);
    out.append(reinterpret_cast<const char*>(words.data()), 4 * words.size());
  };
  for (const SpirvTask& task : tasks) {
    put(task.code);
    put(task.bounds_code);
  }
  return out;
}

absl::StatusOr<std::vector<SpirvTask>> UnpackModules(absl::string_view binary,
                                                     size_t num_tasks) {
  std::vector<SpirvTask> tasks(num_tasks);
  size_t at = 0;
  for (size_t k = 0; k < 2 * num_tasks; ++k) {
    uint32_t count = 0;
    if (at + 4 > binary.size())
      return absl::DataLossError("truncated SPIR-V module list");
    std::memcpy(&count, binary.data() + at, 4);
    at += 4;
    if (count > (binary.size() - at) / 4)
      return absl::DataLossError("truncated SPIR-V module");
    const bool bounds = k % 2 == 1;
    std::vector<uint32_t>& words =
        bounds ? tasks[k / 2].bounds_code : tasks[k / 2].code;
    words.resize(count);
    std::memcpy(words.data(), binary.data() + at, 4 * size_t{count});
    at += 4 * size_t{count};
    if ((!bounds || count > 0) && (count < 5 || words[0] != kSpirvMagic))
      return absl::DataLossError("not a SPIR-V module");
  }
  if (at != binary.size())
    return absl::DataLossError("trailing bytes after the SPIR-V modules");
  return tasks;
}

}  // namespace quadrants::spirv
