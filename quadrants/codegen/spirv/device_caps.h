#ifndef QUADRANTS_CODEGEN_SPIRV_DEVICE_CAPS_H_
#define QUADRANTS_CODEGEN_SPIRV_DEVICE_CAPS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "quadrants/ir/types.h"

namespace quadrants::codegen::spirv {

// What the target device supports, as far as code generation cares. The
// Vulkan runtime fills it from the device's features; tests and MSL export
// may use any combination.
struct DeviceCaps {
  bool int8 = false;           // shaderInt8 + 8-bit storage buffer access
  bool int16 = false;          // shaderInt16 + 16-bit storage buffer access
  bool float16 = false;        // shaderFloat16 + 16-bit storage buffer access
  bool float64 = false;        // shaderFloat64
  bool int64_atomics = false;  // shaderBufferInt64Atomics
  bool float32_atomic_add = false;  // VK_EXT_shader_atomic_float
  bool float64_atomic_add = false;
  // Subgroup basic and arithmetic operations in compute shaders (Vulkan
  // 1.1's subgroup properties).
  bool subgroup_arithmetic = false;
  // 64-bit atomics on block-shared (Workgroup) memory.
  bool shared_int64_atomics = false;
  std::string device_name;  // for error messages

  // Why values of `type` cannot live on the device, or "" when they can.
  std::string MissingFeatureFor(ir::PrimitiveType type) const;
  // Every field as text (part of compile-cache keys).
  std::string ToString() const;

  // What modules cross-compiled to MSL 2.3 may use: narrow types, but no
  // 64-bit or float atomics (MSL has neither). f64 stays allowed: it becomes
  // `double`, which Metal lacks, so such kernels need a device with it.
  static DeviceCaps Metal();
};

}  // namespace quadrants::codegen::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_DEVICE_CAPS_H_
