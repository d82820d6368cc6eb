#ifndef QUADRANTS_RUNTIME_ADSTACK_GATE_COUNT_H_
#define QUADRANTS_RUNTIME_ADSTACK_GATE_COUNT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/ir/adstack_gate.h"
#include "quadrants/runtime/array_memory.h"

namespace quadrants::adstack {

// Where a gate's array is at a launch: `base` and the element's `dtype`,
// and per axis the extent, the byte stride and the index a constant or
// argument fixes (-1 where a loop digit indexes it, with the digit's
// modulus or 0).
struct GateArray {
  const char* base = nullptr;
  ir::PrimitiveType dtype = ir::PrimitiveType::kF32;
  std::vector<int64_t> extents;
  std::vector<int64_t> byte_strides;
  std::vector<int64_t> fixed;
  std::vector<int64_t> moduli;
};

// How many elements of `array` that the gate's loop digits can reach pass
// the gate: at least as many as the iterations that claim a heap row,
// because distinct iterations read distinct elements. A fixed index out of
// range gives 0 (the kernel reads nothing there). The elements are copied
// through `memory` where the host cannot address them (null: in place).
absl::StatusOr<int64_t> CountGatePasses(const ir::AdStackGate& gate,
                                        const GateArray& array,
                                        ArrayMemory* memory);

}  // namespace quadrants::adstack

#endif  // QUADRANTS_RUNTIME_ADSTACK_GATE_COUNT_H_
