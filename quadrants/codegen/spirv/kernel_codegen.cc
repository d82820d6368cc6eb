// GenerateSpirv: each offloaded task through ShaderEmitter
// (shader_emitter_internal.h); here the shader's setup, the task and
// bounds shaders, and the dispatch of statements.
#include "quadrants/codegen/spirv/kernel_codegen.h"

#include <cstring>

#include "quadrants/codegen/spirv/shader_emitter_internal.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::codegen::spirv::shader {

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
  interface_ = {push_constants_, global_id_, num_groups_};
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
  b_.EntryPoint(main_, "main", interface_);
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
  block_size_ = task.block_dim() > 0 ? task.block_dim() : abi::kBlockSize;
  Begin(serial ? 1 : block_size_);
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
         b_.ConstI64(block_size_)});
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
      for (const auto& axis : snodes_.CellAxes(task.snode_id()))
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
  block_size_ = task.block_dim() > 0 ? task.block_dim() : abi::kBlockSize;
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
            {b_.Op(spv::OpIAdd, i64, {count, b_.ConstI64(block_size_ - 1)}),
             b_.ConstI64(block_size_)});
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
                      b_.ConstI64(block_size_ - 1)}),
               b_.ConstI64(block_size_)});
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
  QD_ASSIGN_OR_RETURN(Id value, Visit(s));
  if (value != kNoValue)
    values_[&s] = value;
  return absl::OkStatus();
}

}  // namespace quadrants::codegen::spirv::shader

namespace quadrants::codegen::spirv {

using shader::ShaderEmitter;

std::string CodegenOptions::ToString() const {
  return absl::StrCat("bounds=", check_out_of_bound, " debug=", debug,
                      " forced=", adstack_size_forced, " ", caps.ToString());
}

absl::StatusOr<SpirvKernel> GenerateSpirv(const ir::Kernel& kernel,
                                          const ir::SNodeTree& snodes,
                                          const CodegenOptions& options) {
  if (!kernel.functions().empty()) {
    // Shaders have no call stack: recursion cannot be expressed in SPIR-V.
    const ir::Function& fn = *kernel.functions().front();
    return MakeError(
        ErrorKind::kCompilation, fn.loc(),
        absl::StrCat("kernel '", kernel.name(), "' calls qd.real_func '",
                     fn.name(),
                     "', which the SPIR-V backends (vulkan, metal) do not "
                     "support; real functions run on cpu, cuda and amdgpu. "
                     "Use a qd.func (inlined) instead"));
  }
  SpirvKernel out;
  out.data.facts = DescribeLaunch(kernel);
  uint32_t ad_record_offset = 0;
  QD_ASSIGN_OR_RETURN(std::vector<const ir::OffloadedTaskStmt*> tasks,
                      ir::OffloadedTasks(kernel));
  for (size_t t = 0; t < tasks.size(); ++t) {
    const ir::OffloadedTaskStmt* task = tasks[t];
    SpirvTask spirv_task;
    CompiledTask compiled = DescribeTask(*task, snodes);
    compiled.function = "main";
    {
      ShaderEmitter emitter(kernel, snodes, options, static_cast<int>(t),
                            out.data.error_sites, out.data.print_sites);
      emitter.set_ad_record_offset(ad_record_offset);
      QD_ASSIGN_OR_RETURN(spirv_task.code, emitter.EmitTask(*task));
      compiled.adstacks = emitter.TakeAdStacks();
      compiled.shared_bytes = emitter.shared_bytes();
    }
    if (task->task_kind() == ir::TaskKind::kRangeFor) {
      ShaderEmitter emitter(kernel, snodes, options, static_cast<int>(t),
                            out.data.error_sites, out.data.print_sites);
      emitter.set_ad_record_offset(ad_record_offset);
      QD_ASSIGN_OR_RETURN(spirv_task.bounds_code, emitter.EmitBounds(*task));
      compiled.bounds_function = "main";
    }
    if (!compiled.adstacks.empty()) {
      ad_record_offset += abi::AdRecordBytes(
          static_cast<uint32_t>(compiled.adstacks.size()));
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

}  // namespace quadrants::codegen::spirv
