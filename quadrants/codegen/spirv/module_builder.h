#ifndef QUADRANTS_CODEGEN_SPIRV_MODULE_BUILDER_H_
#define QUADRANTS_CODEGEN_SPIRV_MODULE_BUILDER_H_

#include <spirv/unified1/GLSL.std.450.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <spirv/unified1/spirv.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/string_view.h"

namespace quadrants::codegen::spirv {

using Id = uint32_t;

// Builds one SPIR-V module word by word: result ids, the logical sections in
// the order the specification requires, types and constants deduplicated,
// and one function at a time with its Function-storage variables hoisted to
// the entry block. It knows nothing about the kernel IR; the code generator
// drives it.
class ModuleBuilder {
 public:
  ModuleBuilder();

  Id NewId() { return next_id_++; }

  // ---- module-level declarations ----------------------------------------
  void Capability(spv::Capability capability);
  void Extension(absl::string_view name);
  Id GlslStd450();
  void EntryPoint(Id function, absl::string_view name,
                  const std::vector<Id>& interface);
  void LocalSize(Id function, uint32_t x, uint32_t y, uint32_t z);
  void Decorate(Id target, spv::Decoration decoration,
                std::initializer_list<uint32_t> literals = {});
  void MemberDecorate(Id type, uint32_t member, spv::Decoration decoration,
                      std::initializer_list<uint32_t> literals = {});
  void Name(Id target, absl::string_view name);

  // ---- types (deduplicated) -----------------------------------------------
  Id VoidType();
  Id BoolType();
  Id IntType(int width, bool is_signed);
  Id FloatType(int width);
  Id VectorType(Id component, uint32_t count);
  Id ArrayType(Id element, uint32_t length);
  Id PointerType(spv::StorageClass storage, Id pointee);
  // A new struct type each call (decorations differ per use).
  Id StructType(const std::vector<Id>& members);
  Id FunctionType(Id result, const std::vector<Id>& params);

  // ---- constants (deduplicated) -------------------------------------------
  Id ConstBool(bool value);
  Id ConstInt(Id type, uint64_t bits);  // `type` is an integer type
  Id ConstFloat(Id type, double value);
  Id ConstU32(uint32_t value) { return ConstInt(IntType(32, false), value); }
  Id ConstI32(int32_t value) {
    return ConstInt(IntType(32, true), static_cast<uint32_t>(value));
  }
  Id ConstU64(uint64_t value) { return ConstInt(IntType(64, false), value); }
  Id ConstI64(int64_t value) {
    return ConstInt(IntType(64, true), static_cast<uint64_t>(value));
  }
  // Width and signedness of an integer type made here; {0, false} otherwise.
  std::pair<int, bool> IntInfo(Id type) const;
  int FloatWidth(Id type) const;  // 0 when not a float type

  // A module-scope variable (Input, PushConstant, ...).
  Id GlobalVariable(Id pointer_type, spv::StorageClass storage);

  // ---- functions ----------------------------------------------------------
  // Starts a function; `id` is a result id reserved earlier (for a callee
  // called before its body is built) or 0 for a fresh one.
  Id BeginFunction(Id result_type, Id function_type,
                   const std::vector<Id>& param_types,
                   std::vector<Id>* params = nullptr, Id id = 0);
  void EndFunction();
  // A Function-storage variable, placed in the entry block.
  Id LocalVariable(Id pointee);

  // An instruction placed at the start of the entry block, after the
  // variables: it dominates every use in the function.
  Id EntryOp(spv::Op op, Id type, const std::vector<uint32_t>& operands);
  // Appends an instruction with a result id of type `type`; returns the id.
  Id Op(spv::Op op, Id type, std::initializer_list<uint32_t> operands);
  Id Op(spv::Op op, Id type, const std::vector<uint32_t>& operands);
  // Appends an instruction without a result.
  void OpVoid(spv::Op op, std::initializer_list<uint32_t> operands);
  void OpVoid(spv::Op op, const std::vector<uint32_t>& operands);
  Id Glsl(GLSLstd450 inst, Id type, std::initializer_list<Id> operands);

  // ---- blocks -------------------------------------------------------------
  // Starts block `label` (closing nothing: the previous block must have
  // ended with a terminator).
  void Label(Id label);
  // Terminators; each closes the current block.
  void Branch(Id target);
  void BranchConditional(Id cond, Id if_true, Id if_false);
  void Return();
  bool terminated() const { return terminated_; }

  // The finished module.
  std::vector<uint32_t> Finish();

 private:
  static void Append(std::vector<uint32_t>& out, spv::Op op,
                     const std::vector<uint32_t>& operands);
  static std::vector<uint32_t> StringWords(absl::string_view text);

  Id next_id_ = 1;
  std::vector<spv::Capability> capabilities_;
  std::vector<std::string> extensions_;
  Id glsl_ = 0;
  std::vector<uint32_t> entry_points_;
  std::vector<uint32_t> execution_modes_;
  std::vector<uint32_t> debug_names_;
  std::vector<uint32_t> annotations_;
  std::vector<uint32_t> globals_;  // types, constants, global variables
  std::vector<uint32_t> functions_;

  std::map<std::vector<uint32_t>, Id> types_;
  std::map<std::tuple<Id, uint64_t>, Id> constants_;
  std::map<Id, std::pair<int, bool>> int_types_;
  std::map<Id, int> float_types_;
  Id true_ = 0, false_ = 0;

  // The function being built: its header, entry-block variables and body.
  std::vector<uint32_t> function_header_;
  std::vector<uint32_t> function_variables_;
  std::vector<uint32_t> function_preamble_;
  std::vector<uint32_t> function_body_;
  Id entry_label_ = 0;
  bool terminated_ = true;
};

}  // namespace quadrants::codegen::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_MODULE_BUILDER_H_
