#ifndef QUADRANTS_ADSTACK_REDUCER_JOB_H_
#define QUADRANTS_ADSTACK_REDUCER_JOB_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "quadrants/adstack/reducer_spec.h"
#include "quadrants/ir/types.h"

namespace quadrants::adstack {

// The value of an empty maximum (and of a read out of range), as the
// serial evaluator represents it.
constexpr int64_t kNoValue = std::numeric_limits<int64_t>::min();

// Where one body read's elements live for this launch.
struct ResolvedRead {
  const char* base = nullptr;  // null: every index is out of range
  ir::PrimitiveType dtype = ir::PrimitiveType::kI32;
  std::vector<int64_t> extents;
  std::vector<int64_t> byte_strides;
};

// One spec, ready to reduce: axis ranges evaluated and per-launch constants
// (shapes, scalar parameters) folded into the code.
struct ReducerJob {
  std::vector<int64_t> begin;  // per axis, outermost first
  std::vector<int64_t> end;
  std::vector<BodyInstr> code;  // kShape and kArg already kConst
  std::vector<BodyRead> reads;
  std::vector<ResolvedRead> resolved;  // parallel to `reads`

  // How many points the cross product of the axes has.
  int64_t Points() const;
};

}  // namespace quadrants::adstack

#endif  // QUADRANTS_ADSTACK_REDUCER_JOB_H_
