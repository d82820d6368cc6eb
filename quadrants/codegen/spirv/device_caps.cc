#include "quadrants/codegen/spirv/device_caps.h"

#include "absl/strings/str_cat.h"

namespace quadrants::codegen::spirv {

std::string DeviceCaps::MissingFeatureFor(ir::PrimitiveType type) const {
  using ir::PrimitiveType;
  switch (type) {
    case PrimitiveType::kU1:
    case PrimitiveType::kI8:
    case PrimitiveType::kU8:
      // u1 is stored as a byte.
      return int8 ? "" : "shaderInt8 and storageBuffer8BitAccess";
    case PrimitiveType::kI16:
    case PrimitiveType::kU16:
      return int16 ? "" : "shaderInt16 and storageBuffer16BitAccess";
    case PrimitiveType::kF16:
      return float16 ? "" : "shaderFloat16 and storageBuffer16BitAccess";
    case PrimitiveType::kF64:
      return float64 ? "" : "shaderFloat64";
    default:
      return "";
  }
}

DeviceCaps DeviceCaps::Metal() {
  DeviceCaps caps;
  caps.int8 = caps.int16 = caps.float16 = caps.float64 = true;
  caps.device_name = "Metal (MSL 2.3)";
  return caps;
}

std::string DeviceCaps::ToString() const {
  return absl::StrCat("i8=", int8, " i16=", int16, " f16=", float16,
                      " f64=", float64, " i64atomics=", int64_atomics,
                      " f32add=", float32_atomic_add,
                      " f64add=", float64_atomic_add,
                      " subgroup_arith=", subgroup_arithmetic,
                      " shared_i64atomics=", shared_int64_atomics);
}

}  // namespace quadrants::codegen::spirv
