#ifndef QUADRANTS_CODEGEN_LLVM_LOWERED_KERNEL_H_
#define QUADRANTS_CODEGEN_LLVM_LOWERED_KERNEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llvm/IR/Module.h"
#include "quadrants/common/source_location.h"
#include "quadrants/ir/op_kinds.h"
#include "quadrants/ir/print_format.h"
#include "quadrants/ir/size_expr.h"
#include "quadrants/ir/types.h"

namespace quadrants::codegen {

// One offloaded task as a pair of LLVM functions:
//   void <function>(QdLaunchContext* ctx, i64 begin, i64 end, i32 thread_id)
// runs iterations [begin, end) (a serial task ignores the range), and, for
// range_for tasks,
//   void <bounds_function>(QdLaunchContext* ctx, i64* out)
// writes the iteration range to out[0], out[1] right before dispatch.
// One adstack of a task. Its storage, per thread, is an i64 count followed
// by `capacity` slots of `slot_bytes` (a float slot holds the primal and
// its adjoint).
struct AdStackSpec {
  ir::PrimitiveType dtype = ir::PrimitiveType::kF32;
  int64_t slot_bytes = 0;
  int64_t static_capacity = 0;  // 0: decided at launch
  ir::SizeExpr::Ptr size_expr;  // the launch-time capacity, when captured
  SourceLocation loc;           // the loop the stack serves
};

struct LoweredTask {
  ir::TaskKind kind = ir::TaskKind::kSerial;
  std::string function;
  std::string bounds_function;
  int64_t struct_for_cells = 0;  // struct_for: iterations
  // Iterations `function` runs together in SIMD lanes (CPU); 0 when it
  // runs them one at a time. Each thread then owns `simd_lanes` adstack
  // thread slices.
  int simd_lanes = 0;
  SourceLocation loc;
  std::vector<AdStackSpec> ad_stacks;  // ids are positions in this list
};

// A place that can raise a run-time error, so the host can name it.
struct ErrorSite {
  std::string description;  // e.g. "ndarray 'a' (argument 0)"
  SourceLocation loc;
  // Types of the values an assertion reports (floats travel as f64 bits).
  std::vector<ir::PrimitiveType> value_types;
};

struct LoweredKernel {
  std::unique_ptr<llvm::Module> module;
  std::vector<LoweredTask> tasks;
  std::vector<ErrorSite> error_sites;
  // What each qd_print call's site id stands for.
  std::vector<ir::PrintSite> print_sites;
};

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_LOWERED_KERNEL_H_
