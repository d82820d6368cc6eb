#ifndef QUADRANTS_CODEGEN_AMDGPU_HSACO_COMPILER_H_
#define QUADRANTS_CODEGEN_AMDGPU_HSACO_COMPILER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "llvm/Target/TargetMachine.h"
#include "quadrants/codegen/llvm/gpu_entries.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"
#include "quadrants/codegen/llvm/max_reduce_kernel.h"

namespace quadrants::codegen {

// Turns lowered kernels into HSACO code objects (AMDHSA ELF shared objects,
// as hipModuleLoadData takes them) for one AMD GPU, e.g. "gfx942". Each task
// gets the amdgpu_kernel entries of codegen/llvm/gpu_entries.h.
//
// Every target runs in wave64: CDNA (gfx9) has no other mode, and RDNA
// (gfx10+) runs wave64 too, so the launcher's 128-thread blocks are two
// wavefronts everywhere and the device library's wavefront-size switch is
// the same for every target.
//
// Math comes from the ROCm device library ocml.bc ($ROCM_PATH, or the
// usual install paths); its control constants (__oclc_*) are defined here
// from the target rather than linked from the per-ISA oclc_*.bc files, so
// targets newer than the installed device library still compile. Linking
// runs ld.lld ($QD_LLD, or LLVM 19's) as a subprocess.
class HsacoCompiler {
 public:
  // Unavailable "AMDGPU not available: ..." when LLVM does not know
  // `gfx_target`, or ocml.bc or ld.lld is missing.
  static absl::StatusOr<std::unique_ptr<HsacoCompiler>> Create(
      const std::string& gfx_target);

  const std::string& triple() const { return triple_; }
  // The layout kernels are lowered with: the target's, with allocas in the
  // generic address space (Compile moves them to the private one).
  const std::string& data_layout() const { return lowering_layout_; }
  const std::string& gfx_target() const { return gfx_target_; }
  // "gfx942 wave64 cov5": what the code object is valid for.
  const std::string& target_description() const { return description_; }
  // The bytes of the device library the code links, for cache keys.
  const std::string& device_library() const { return ocml_; }

  // Adds the entries, links the runtime module and ocml, optimizes, emits
  // an object and links it into a code object.
  absl::StatusOr<std::string> Compile(LoweredKernel& lowered);
  // The code object of the adstack sizing max-reduction kernel for `shape`
  // (see codegen/llvm/max_reduce_kernel.h), entry kMaxReduceEntry.
  absl::StatusOr<std::string> CompileMaxReduce(const MaxReduceShape& shape);

  static std::string EntryName(const std::string& function) {
    return GpuEntryName(function);
  }
  static std::string DeviceRangeEntryName(const std::string& function) {
    return GpuDeviceRangeEntryName(function);
  }

  HsacoCompiler(std::unique_ptr<llvm::TargetMachine> machine,
                std::string gfx_target, std::string ocml, std::string lld);

 private:
  // Compiles every function for this GPU, verifies, optimizes, emits an
  // object and links it into a code object.
  absl::StatusOr<std::string> EmitCodeObject(llvm::Module& module);

  std::unique_ptr<llvm::TargetMachine> machine_;
  std::string gfx_target_;
  std::string ocml_;  // the bitcode's bytes
  std::string lld_;   // path of ld.lld
  std::string triple_;
  std::string data_layout_;
  std::string lowering_layout_;
  std::string description_;
};

// The ISA version number the device library expects for `gfx_target`
// (major * 1000 + minor * 100 + stepping: gfx90a is 9010, gfx1100 11000),
// or -1 when the name is not gfx<major><minor><stepping>.
int AmdgpuIsaVersion(const std::string& gfx_target);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_AMDGPU_HSACO_COMPILER_H_
