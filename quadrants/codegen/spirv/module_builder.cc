#include "quadrants/codegen/spirv/module_builder.h"

#include <algorithm>
#include <cstring>

namespace quadrants::codegen::spirv {

ModuleBuilder::ModuleBuilder() = default;

void ModuleBuilder::Append(std::vector<uint32_t>& out, spv::Op op,
                           const std::vector<uint32_t>& operands) {
  const uint32_t words = static_cast<uint32_t>(operands.size()) + 1;
  out.push_back((words << spv::WordCountShift) | static_cast<uint32_t>(op));
  out.insert(out.end(), operands.begin(), operands.end());
}

std::vector<uint32_t> ModuleBuilder::StringWords(absl::string_view text) {
  // Nul-terminated, padded with zeros to a whole word.
  std::vector<uint32_t> words(text.size() / 4 + 1, 0);
  std::memcpy(words.data(), text.data(), text.size());
  return words;
}

void ModuleBuilder::Capability(spv::Capability capability) {
  for (spv::Capability c : capabilities_) {
    if (c == capability)
      return;
  }
  capabilities_.push_back(capability);
}

void ModuleBuilder::Extension(absl::string_view name) {
  for (const std::string& e : extensions_) {
    if (e == name)
      return;
  }
  extensions_.emplace_back(name);
}

Id ModuleBuilder::GlslStd450() {
  if (glsl_ == 0)
    glsl_ = NewId();
  return glsl_;
}

void ModuleBuilder::EntryPoint(Id function, absl::string_view name,
                               const std::vector<Id>& interface) {
  std::vector<uint32_t> operands = {spv::ExecutionModelGLCompute, function};
  for (uint32_t w : StringWords(name))
    operands.push_back(w);
  operands.insert(operands.end(), interface.begin(), interface.end());
  Append(entry_points_, spv::OpEntryPoint, operands);
}

void ModuleBuilder::LocalSize(Id function, uint32_t x, uint32_t y, uint32_t z) {
  Append(execution_modes_, spv::OpExecutionMode,
         {function, spv::ExecutionModeLocalSize, x, y, z});
}

void ModuleBuilder::Decorate(Id target, spv::Decoration decoration,
                             std::initializer_list<uint32_t> literals) {
  std::vector<uint32_t> operands = {target, static_cast<uint32_t>(decoration)};
  operands.insert(operands.end(), literals.begin(), literals.end());
  Append(annotations_, spv::OpDecorate, operands);
}

void ModuleBuilder::MemberDecorate(Id type, uint32_t member,
                                   spv::Decoration decoration,
                                   std::initializer_list<uint32_t> literals) {
  std::vector<uint32_t> operands = {type, member,
                                    static_cast<uint32_t>(decoration)};
  operands.insert(operands.end(), literals.begin(), literals.end());
  Append(annotations_, spv::OpMemberDecorate, operands);
}

void ModuleBuilder::Name(Id target, absl::string_view name) {
  std::vector<uint32_t> operands = {target};
  for (uint32_t w : StringWords(name))
    operands.push_back(w);
  Append(debug_names_, spv::OpName, operands);
}

namespace {
// Keys of the type table: the opcode followed by the operands after the
// result id.
std::vector<uint32_t> TypeKey(spv::Op op, std::vector<uint32_t> operands) {
  operands.insert(operands.begin(), static_cast<uint32_t>(op));
  return operands;
}
}  // namespace

#define QD_DEDUP_TYPE(op, ...)                                  \
  do {                                                          \
    std::vector<uint32_t> key = TypeKey(op, {__VA_ARGS__});     \
    if (auto it = types_.find(key); it != types_.end())         \
      return it->second;                                        \
    Id id = NewId();                                            \
    std::vector<uint32_t> operands(key.begin() + 1, key.end()); \
    operands.insert(operands.begin(), id);                      \
    Append(globals_, op, operands);                             \
    types_[key] = id;                                           \
    return id;                                                  \
  } while (0)

Id ModuleBuilder::VoidType() {
  QD_DEDUP_TYPE(spv::OpTypeVoid);
}

Id ModuleBuilder::BoolType() {
  QD_DEDUP_TYPE(spv::OpTypeBool);
}

Id ModuleBuilder::IntType(int width, bool is_signed) {
  std::vector<uint32_t> key = TypeKey(
      spv::OpTypeInt,
      {static_cast<uint32_t>(width), static_cast<uint32_t>(is_signed ? 1 : 0)});
  if (auto it = types_.find(key); it != types_.end())
    return it->second;
  Id id = NewId();
  if (width == 8)
    Capability(spv::CapabilityInt8);
  if (width == 16)
    Capability(spv::CapabilityInt16);
  if (width == 64)
    Capability(spv::CapabilityInt64);
  Append(globals_, spv::OpTypeInt,
         {id, static_cast<uint32_t>(width), is_signed ? 1u : 0u});
  types_[key] = id;
  int_types_[id] = {width, is_signed};
  return id;
}

Id ModuleBuilder::FloatType(int width) {
  std::vector<uint32_t> key =
      TypeKey(spv::OpTypeFloat, {static_cast<uint32_t>(width)});
  if (auto it = types_.find(key); it != types_.end())
    return it->second;
  Id id = NewId();
  if (width == 16)
    Capability(spv::CapabilityFloat16);
  if (width == 64)
    Capability(spv::CapabilityFloat64);
  Append(globals_, spv::OpTypeFloat, {id, static_cast<uint32_t>(width)});
  types_[key] = id;
  float_types_[id] = width;
  return id;
}

Id ModuleBuilder::VectorType(Id component, uint32_t count) {
  QD_DEDUP_TYPE(spv::OpTypeVector, component, count);
}

Id ModuleBuilder::ArrayType(Id element, uint32_t length) {
  const Id length_id = ConstU32(length);
  QD_DEDUP_TYPE(spv::OpTypeArray, element, length_id);
}

Id ModuleBuilder::PointerType(spv::StorageClass storage, Id pointee) {
  if (storage == spv::StorageClassPhysicalStorageBuffer) {
    // Narrow values in buffers need the storage capabilities.
    const int width = std::max(IntInfo(pointee).first, FloatWidth(pointee));
    if (width == 8)
      Capability(spv::CapabilityStorageBuffer8BitAccess);
    if (width == 16)
      Capability(spv::CapabilityStorageBuffer16BitAccess);
  }
  QD_DEDUP_TYPE(spv::OpTypePointer, static_cast<uint32_t>(storage), pointee);
}

Id ModuleBuilder::FunctionType(Id result, const std::vector<Id>& params) {
  std::vector<uint32_t> operands = {result};
  operands.insert(operands.end(), params.begin(), params.end());
  std::vector<uint32_t> key = TypeKey(spv::OpTypeFunction, operands);
  if (auto it = types_.find(key); it != types_.end())
    return it->second;
  Id id = NewId();
  operands.insert(operands.begin(), id);
  Append(globals_, spv::OpTypeFunction, operands);
  types_[key] = id;
  return id;
}

#undef QD_DEDUP_TYPE

Id ModuleBuilder::StructType(const std::vector<Id>& members) {
  Id id = NewId();
  std::vector<uint32_t> operands = {id};
  operands.insert(operands.end(), members.begin(), members.end());
  Append(globals_, spv::OpTypeStruct, operands);
  return id;
}

Id ModuleBuilder::ConstBool(bool value) {
  Id& slot = value ? true_ : false_;
  if (slot == 0) {
    slot = NewId();
    Append(globals_, value ? spv::OpConstantTrue : spv::OpConstantFalse,
           {BoolType(), slot});
  }
  return slot;
}

Id ModuleBuilder::ConstInt(Id type, uint64_t bits) {
  const int width = IntInfo(type).first;
  if (width < 64)
    bits &= (uint64_t{1} << width) - 1;
  const auto key = std::make_tuple(type, bits);
  if (auto it = constants_.find(key); it != constants_.end())
    return it->second;
  Id id = NewId();
  if (width == 64) {
    Append(globals_, spv::OpConstant,
           {type, id, static_cast<uint32_t>(bits),
            static_cast<uint32_t>(bits >> 32)});
  } else {
    // Narrow signed literals are sign-extended to the word.
    uint32_t word = static_cast<uint32_t>(bits);
    if (IntInfo(type).second && width < 32 && (bits >> (width - 1)) & 1)
      word |= ~uint32_t{0} << width;
    Append(globals_, spv::OpConstant, {type, id, word});
  }
  constants_[key] = id;
  return id;
}

Id ModuleBuilder::ConstFloat(Id type, double value) {
  const int width = FloatWidth(type);
  uint64_t bits = 0;
  std::vector<uint32_t> words;
  if (width == 64) {
    std::memcpy(&bits, &value, 8);
    words = {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)};
  } else if (width == 32) {
    float f = static_cast<float>(value);
    uint32_t w;
    std::memcpy(&w, &f, 4);
    bits = w;
    words = {w};
  } else {
    // f16: round through f32 by truncating the mantissa to nearest-even.
    float f = static_cast<float>(value);
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    int exponent = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
    uint32_t mantissa = x & 0x7fffffu;
    uint32_t h;
    if (((x >> 23) & 0xff) == 0xff) {
      h = sign | 0x7c00u | (mantissa ? 0x200u : 0u);
    } else if (exponent >= 31) {
      h = sign | 0x7c00u;
    } else if (exponent <= 0) {
      if (exponent < -10) {
        h = sign;
      } else {
        mantissa |= 0x800000u;
        const int shift = 14 - exponent;
        uint32_t half = mantissa >> shift;
        const uint32_t rest = mantissa & ((1u << shift) - 1);
        const uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1)))
          ++half;
        h = sign | half;
      }
    } else {
      uint32_t half =
          (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
      const uint32_t rest = mantissa & 0x1fffu;
      if (rest > 0x1000u || (rest == 0x1000u && (half & 1)))
        ++half;
      h = sign | half;
    }
    bits = h;
    words = {h};
  }
  const auto key = std::make_tuple(type, bits);
  if (auto it = constants_.find(key); it != constants_.end())
    return it->second;
  Id id = NewId();
  std::vector<uint32_t> operands = {type, id};
  operands.insert(operands.end(), words.begin(), words.end());
  Append(globals_, spv::OpConstant, operands);
  constants_[key] = id;
  return id;
}

std::pair<int, bool> ModuleBuilder::IntInfo(Id type) const {
  auto it = int_types_.find(type);
  return it == int_types_.end() ? std::make_pair(0, false) : it->second;
}

int ModuleBuilder::FloatWidth(Id type) const {
  auto it = float_types_.find(type);
  return it == float_types_.end() ? 0 : it->second;
}

Id ModuleBuilder::GlobalVariable(Id pointer_type, spv::StorageClass storage) {
  Id id = NewId();
  Append(globals_, spv::OpVariable,
         {pointer_type, id, static_cast<uint32_t>(storage)});
  return id;
}

Id ModuleBuilder::BeginFunction(Id result_type, Id function_type,
                                const std::vector<Id>& param_types,
                                std::vector<Id>* params, Id id) {
  if (id == 0)
    id = NewId();
  function_header_.clear();
  function_variables_.clear();
  function_preamble_.clear();
  function_body_.clear();
  Append(function_header_, spv::OpFunction,
         {result_type, id, spv::FunctionControlMaskNone, function_type});
  for (Id type : param_types) {
    Id param = NewId();
    Append(function_header_, spv::OpFunctionParameter, {type, param});
    if (params != nullptr)
      params->push_back(param);
  }
  entry_label_ = NewId();
  terminated_ = false;
  return id;
}

void ModuleBuilder::EndFunction() {
  functions_.insert(functions_.end(), function_header_.begin(),
                    function_header_.end());
  Append(functions_, spv::OpLabel, {entry_label_});
  functions_.insert(functions_.end(), function_variables_.begin(),
                    function_variables_.end());
  functions_.insert(functions_.end(), function_preamble_.begin(),
                    function_preamble_.end());
  functions_.insert(functions_.end(), function_body_.begin(),
                    function_body_.end());
  Append(functions_, spv::OpFunctionEnd, {});
  function_header_.clear();
  function_variables_.clear();
  function_body_.clear();
}

Id ModuleBuilder::LocalVariable(Id pointee) {
  Id id = NewId();
  Append(function_variables_, spv::OpVariable,
         {PointerType(spv::StorageClassFunction, pointee), id,
          spv::StorageClassFunction});
  return id;
}

Id ModuleBuilder::EntryOp(spv::Op op, Id type,
                          const std::vector<uint32_t>& operands) {
  Id id = NewId();
  std::vector<uint32_t> all = {type, id};
  all.insert(all.end(), operands.begin(), operands.end());
  Append(function_preamble_, op, all);
  return id;
}

Id ModuleBuilder::Op(spv::Op op, Id type,
                     std::initializer_list<uint32_t> operands) {
  return Op(op, type, std::vector<uint32_t>(operands));
}

Id ModuleBuilder::Op(spv::Op op, Id type,
                     const std::vector<uint32_t>& operands) {
  Id id = NewId();
  std::vector<uint32_t> all = {type, id};
  all.insert(all.end(), operands.begin(), operands.end());
  Append(function_body_, op, all);
  return id;
}

void ModuleBuilder::OpVoid(spv::Op op,
                           std::initializer_list<uint32_t> operands) {
  OpVoid(op, std::vector<uint32_t>(operands));
}

void ModuleBuilder::OpVoid(spv::Op op, const std::vector<uint32_t>& operands) {
  Append(function_body_, op, operands);
}

Id ModuleBuilder::Glsl(GLSLstd450 inst, Id type,
                       std::initializer_list<Id> operands) {
  std::vector<uint32_t> all = {GlslStd450(), static_cast<uint32_t>(inst)};
  all.insert(all.end(), operands.begin(), operands.end());
  return Op(spv::OpExtInst, type, all);
}

void ModuleBuilder::Label(Id label) {
  Append(function_body_, spv::OpLabel, {label});
  terminated_ = false;
}

void ModuleBuilder::Branch(Id target) {
  Append(function_body_, spv::OpBranch, {target});
  terminated_ = true;
}

void ModuleBuilder::BranchConditional(Id cond, Id if_true, Id if_false) {
  Append(function_body_, spv::OpBranchConditional, {cond, if_true, if_false});
  terminated_ = true;
}

void ModuleBuilder::Return() {
  Append(function_body_, spv::OpReturn, {});
  terminated_ = true;
}

std::vector<uint32_t> ModuleBuilder::Finish() {
  std::vector<uint32_t> out = {spv::MagicNumber, 0x00010500u, 0, 0, 0};
  for (spv::Capability c : capabilities_)
    Append(out, spv::OpCapability, {static_cast<uint32_t>(c)});
  for (const std::string& e : extensions_)
    Append(out, spv::OpExtension, StringWords(e));
  if (glsl_ != 0) {
    std::vector<uint32_t> operands = {glsl_};
    for (uint32_t w : StringWords("GLSL.std.450"))
      operands.push_back(w);
    Append(out, spv::OpExtInstImport, operands);
  }
  Append(
      out, spv::OpMemoryModel,
      {spv::AddressingModelPhysicalStorageBuffer64, spv::MemoryModelGLSL450});
  out.insert(out.end(), entry_points_.begin(), entry_points_.end());
  out.insert(out.end(), execution_modes_.begin(), execution_modes_.end());
  out.insert(out.end(), debug_names_.begin(), debug_names_.end());
  out.insert(out.end(), annotations_.begin(), annotations_.end());
  out.insert(out.end(), globals_.begin(), globals_.end());
  out.insert(out.end(), functions_.begin(), functions_.end());
  out[3] = next_id_;  // the id bound
  return out;
}

}  // namespace quadrants::codegen::spirv
