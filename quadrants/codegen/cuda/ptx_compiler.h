#ifndef QUADRANTS_CODEGEN_CUDA_PTX_COMPILER_H_
#define QUADRANTS_CODEGEN_CUDA_PTX_COMPILER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "llvm/Target/TargetMachine.h"
#include "quadrants/codegen/llvm/gpu_entries.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"
#include "quadrants/codegen/llvm/max_reduce_kernel.h"

namespace quadrants::codegen {

// Turns lowered kernels into PTX for one NVIDIA GPU. Each task gets the
// `__global__` entries of codegen/llvm/gpu_entries.h.
class PtxCompiler {
 public:
  // `compute_capability` as major * 10 + minor; `driver_version` as
  // cuDriverGetVersion reports it (the PTX ISA is the newest both the driver
  // and LLVM support). Needs libdevice.10.bc from a CUDA toolkit (found
  // through $CUDA_HOME, $CUDA_PATH or the usual install paths).
  static absl::StatusOr<std::unique_ptr<PtxCompiler>> Create(
      int compute_capability, int driver_version);

  const std::string& triple() const { return triple_; }
  const std::string& data_layout() const { return data_layout_; }
  // "sm_90 +ptx85": what the PTX is valid for.
  const std::string& target_description() const { return description_; }

  // Adds the entries, links the runtime module and libdevice, optimizes and
  // emits PTX text.
  absl::StatusOr<std::string> Compile(LoweredKernel& lowered);

  // PTX of the adstack sizing max-reduction kernel for `shape` (see
  // codegen/llvm/max_reduce_kernel.h), entry kMaxReduceEntry.
  absl::StatusOr<std::string> CompileMaxReduce(const MaxReduceShape& shape);

  static std::string EntryName(const std::string& function) {
    return GpuEntryName(function);
  }
  static std::string DeviceRangeEntryName(const std::string& function) {
    return GpuDeviceRangeEntryName(function);
  }

  PtxCompiler(std::unique_ptr<llvm::TargetMachine> machine,
              std::string libdevice, std::string description);

 private:
  // Verifies, optimizes and prints `module` as PTX.
  absl::StatusOr<std::string> Emit(llvm::Module& module);

  std::unique_ptr<llvm::TargetMachine> machine_;
  std::string libdevice_;  // the bitcode's bytes
  std::string triple_;
  std::string data_layout_;
  std::string description_;
};

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_CUDA_PTX_COMPILER_H_
