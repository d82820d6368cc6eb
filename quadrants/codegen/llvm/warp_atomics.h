#ifndef QUADRANTS_CODEGEN_LLVM_WARP_ATOMICS_H_
#define QUADRANTS_CODEGEN_LLVM_WARP_ATOMICS_H_

#include "llvm/IR/IRBuilder.h"

namespace quadrants::codegen {

// An atomic float add of `value` to `ptr`, an address every thread of the
// launch shares (e.g. a scalar loss), on NVPTX: when the whole warp is
// converged, the 32 values are summed with shuffles and lane 0 adds the sum,
// so the address sees one atomic per warp instead of 32; otherwise each lane
// adds its own. Float addition then associates differently, as it does
// between any two thread schedules.
void EmitWarpAggregatedAdd(llvm::IRBuilder<>& b, llvm::Value* ptr,
                           llvm::Value* value);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_WARP_ATOMICS_H_
