#ifndef QUADRANTS_CODEGEN_CUDA_NVPTX_SIMT_H_
#define QUADRANTS_CODEGEN_CUDA_NVPTX_SIMT_H_

#include "quadrants/codegen/llvm/simt_target.h"

namespace quadrants::codegen {

// qd.simt's primitives as NVVM intrinsics: bar.sync and its reductions,
// membar, shfl.sync, vote.sync and match.sync. Subgroup operations run on
// the warp's active lanes (activemask); warp operations take the user's
// mask.
SimtTarget NvptxSimt();

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_CUDA_NVPTX_SIMT_H_
