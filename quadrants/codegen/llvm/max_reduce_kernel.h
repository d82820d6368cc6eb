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
#include "quadrants/adstack/reducer_job.h"

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
  // Points, coordinates and byte offsets fit 32 bits, so the kernel's
  // index arithmetic runs in 32 bits (half the registers).
  bool narrow = false;
  std::vector<adstack::BodyInstr> code;  // kConst values are parameters
  std::vector<Read> reads;

  static MaxReduceShape Of(const adstack::ReducerJob& job);
  // How many i64 parameter words its kernel takes (see MaxReduceParams).
  int NumParams() const;
  // Equal for jobs one kernel serves.
  std::string Key() const;
};

// The kernel's parameter words for `job`, each an i64 kernel argument, so
// a launch copies nothing in:
//   [0]                        the number of points
//   per axis                   begin, count
//   per kConst instruction     its value
//   per read                   base address, then per index: extent, byte
//                              stride (extent 0 for a read with no base)
std::vector<int64_t> MaxReduceParams(const adstack::ReducerJob& job);

inline constexpr char kMaxReduceEntry[] = "qd_max_reduce";
// Threads per block the kernel is launched (and register-limited) for.
inline constexpr int kMaxReduceBlock = 256;

// Builds
//   void qd_max_reduce(i64* out, i64 word0, ..., i64 wordN-1)
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

// Adds, for callers that cannot pass a shape-dependent number of arguments
// (a host running the kernel as a plain function),
//   void qd_max_reduce_packed(const i64* words, i64* out)
inline constexpr char kMaxReducePackedEntry[] = "qd_max_reduce_packed";
void AddPackedMaxReduceEntry(llvm::Module& module);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_MAX_REDUCE_KERNEL_H_
