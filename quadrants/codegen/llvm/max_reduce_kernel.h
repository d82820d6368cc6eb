#ifndef QUADRANTS_CODEGEN_LLVM_MAX_REDUCE_KERNEL_H_
#define QUADRANTS_CODEGEN_LLVM_MAX_REDUCE_KERNEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "quadrants/codegen/llvm/gpu_entries.h"
#include "quadrants/ir/types.h"
#include "quadrants/runtime/adstack/max_reducer.h"

namespace quadrants::codegen {

// What a GPU max-reduction kernel is specialized on: the body's operations
// and the reads' element types and index forms. Everything that changes
// from launch to launch (axis ranges, constants, read addresses, extents
// and strides) is a kernel parameter, so one kernel serves every launch of
// a spec.
struct MaxReduceShape {
  struct Read {
    ir::PrimitiveType dtype = ir::PrimitiveType::kI32;
    std::vector<adstack::ReadIndex> indices;
  };
  int num_axes = 0;
  std::vector<adstack::BodyInstr> code;  // kConst values are parameters
  std::vector<Read> reads;

  static MaxReduceShape Of(const adstack::ReducerJob& job);
  // Equal for jobs one kernel serves.
  std::string Key() const;
};

// The kernel's parameter block for `job`, as i64 words:
//   [0]                        the number of points
//   per axis                   begin, count
//   per kConst instruction     its value
//   per read                   base address, then per index: extent, byte
//                              stride (extent 0 for a read with no base)
std::vector<int64_t> MaxReduceParams(const adstack::ReducerJob& job);

inline constexpr char kMaxReduceEntry[] = "qd_max_reduce";

// Builds
//   void qd_max_reduce(const i64* params, i64* out)
// which folds the body's maximum over its share of the points (grid-stride,
// innermost axis fastest) into *out with an atomic signed max. *out starts
// at adstack::kNoValue, which is also what a point without a value gives.
// `target.subgroup_max`, when set, combines a subgroup's maxima first so
// that one thread per subgroup issues the atomic.
std::unique_ptr<llvm::Module> BuildMaxReduceKernel(const MaxReduceShape& shape,
                                                   const GpuEntryTarget& target,
                                                   llvm::LLVMContext& context,
                                                   const std::string& triple,
                                                   const std::string& layout);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_MAX_REDUCE_KERNEL_H_
