#ifndef QUADRANTS_CODEGEN_AMDGPU_AMDGCN_SIMT_H_
#define QUADRANTS_CODEGEN_AMDGPU_AMDGCN_SIMT_H_

#include "quadrants/codegen/llvm/simt_target.h"

namespace quadrants::codegen {

// qd.simt's primitives as AMDGCN intrinsics: s_barrier with workgroup
// fences, ds_bpermute shuffles over the wavefront, ballots and
// readfirstlane. CUDA's masked warp intrinsics are refused.
SimtTarget AmdgcnSimt();

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_AMDGPU_AMDGCN_SIMT_H_
