#ifndef QUADRANTS_CODEGEN_CUDA_PTX_COMPILER_H_
#define QUADRANTS_CODEGEN_CUDA_PTX_COMPILER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"

namespace quadrants::codegen {

// The GPU compiler for one NVIDIA GPU: PTX text, with the runtime module and
// the CUDA toolkit's libdevice linked in. `compute_capability` as
// major * 10 + minor; `driver_version` as cuDriverGetVersion reports it (the
// PTX ISA is the newest both the driver and LLVM support). libdevice.10.bc
// is found through $CUDA_HOME, $CUDA_PATH or the usual install paths.
absl::StatusOr<std::unique_ptr<GpuCompiler>> CreatePtxCompiler(
    int compute_capability, int driver_version);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_CUDA_PTX_COMPILER_H_
