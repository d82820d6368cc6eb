#ifndef QUADRANTS_CODEGEN_LLVM_GPU_COMPILER_H_
#define QUADRANTS_CODEGEN_LLVM_GPU_COMPILER_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Target/TargetMachine.h"
#include "quadrants/codegen/llvm/gpu_entries.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"
#include "quadrants/codegen/llvm/max_reduce_kernel.h"
#include "quadrants/codegen/llvm/simt_target.h"

namespace quadrants::codegen {

// LLVM's GPU target: its name in internal errors ("NVPTX") and triple.
struct LlvmGpuTarget {
  const char* name = "";
  const char* triple = "";
};

// What LLVM emits for a GPU target, and how "LLVM cannot emit ..." names it.
struct GpuOutput {
  llvm::CodeGenFileType file_type = llvm::CodeGenFileType::AssemblyFile;
  const char* name = "";
};

// A GPU target's names, the GPU it compiles for, and what every kernel
// gets from it.
struct GpuTargetSpec {
  // "CUDA": a missing piece reads "CUDA not available: <reason>".
  const char* platform = "";
  LlvmGpuTarget llvm;
  std::string cpu;       // "sm_90", "gfx942"
  std::string features;  // "+ptx85", "+wavefrontsize64"
  // What "LLVM cannot generate code for ..." names.
  std::string machine;
  // What a binary is valid for ("sm_90 +ptx85"); part of cache keys.
  std::string description;
  GpuOutput output;
  // How kernel entries read thread ids and become launchable.
  GpuEntryTarget entries;
  // How kernels spell qd.simt's block, subgroup and warp primitives.
  SimtTarget simt;
  // The runtime module built for the target, linked into every kernel.
  absl::Span<const unsigned char> runtime_bitcode;
  // Whether kernels may sum atomics across a warp first (the lowering
  // writes that with NVPTX intrinsics).
  bool warp_aggregate_atomics = false;
};

// One GPU target's part of the pipeline GpuCompiler runs for every target,
// in the manner of Triton's TargetInfoBase: its spec, the device library
// linked into kernels, the fix-ups the LLVM target needs and how what LLVM
// emits becomes the binary the driver loads.
class GpuTarget {
 public:
  explicit GpuTarget(GpuTargetSpec spec) : spec_(std::move(spec)) {}
  virtual ~GpuTarget() = default;
  GpuTarget(const GpuTarget&) = delete;
  GpuTarget& operator=(const GpuTarget&) = delete;

  const GpuTargetSpec& spec() const { return spec_; }
  // The Unavailable error "<platform> not available: <reason>".
  absl::Status Unavailable(absl::string_view reason) const;
  // The bytes of the first readable `dir`/`file` of `dirs`; else
  // Unavailable "<what> was not found; looked at <paths>. <hint>".
  absl::StatusOr<std::string> ReadDeviceLibrary(
      const std::vector<std::string>& dirs, absl::string_view file,
      absl::string_view what, absl::string_view hint) const;

  // Finds what compiling needs beyond LLVM (any tool Package runs) and
  // returns the device math library's bitcode, linked into every kernel
  // after the runtime module; Unavailable naming what is missing.
  virtual absl::StatusOr<std::string> LoadTools() = 0;
  // The layout kernels are lowered with, from the target machine's.
  virtual std::string LoweringLayout(const std::string& layout) const {
    return layout;
  }
  // Adjusts a linked kernel module before optimization.
  virtual absl::Status FinishKernel(llvm::Module& module) const = 0;
  // Sets the max-reduction kernel's launch bounds.
  virtual void TuneMaxReduce(llvm::Function& entry,
                             const MaxReduceShape& shape) const {}
  // Prepares any module (kernel or reduction) for verification.
  virtual void PrepareModule(llvm::Module& module) const {}
  // The binary the driver loads, from what LLVM emitted.
  virtual absl::StatusOr<std::string> Package(
      llvm::StringRef emitted) const = 0;

 private:
  GpuTargetSpec spec_;
};

// Turns lowered kernels into the binary one GPU loads: adds the kernel
// entries of codegen/llvm/gpu_entries.h, links the target's runtime module
// and device library, verifies, optimizes, emits and packages.
class GpuCompiler {
 public:
  // Unavailable "<platform> not available: ..." when LLVM lacks the target
  // (registered by the caller, see InitializeLlvmTargetOnce) or the
  // target's tools are missing.
  static absl::StatusOr<std::unique_ptr<GpuCompiler>> Create(
      std::unique_ptr<GpuTarget> target);

  const std::string& triple() const { return triple_; }
  // The layout kernels are lowered with.
  const std::string& data_layout() const { return lowering_layout_; }
  const std::string& cpu() const { return target_->spec().cpu; }
  const std::string& target_description() const {
    return target_->spec().description;
  }
  const SimtTarget& simt() const { return target_->spec().simt; }
  bool warp_aggregate_atomics() const {
    return target_->spec().warp_aggregate_atomics;
  }
  absl::Span<const unsigned char> runtime_bitcode() const {
    return target_->spec().runtime_bitcode;
  }
  absl::Span<const unsigned char> device_library() const {
    return absl::MakeConstSpan(
        reinterpret_cast<const unsigned char*>(device_library_.data()),
        device_library_.size());
  }

  // The binary of `lowered`, whose tasks name the entries to add; its
  // module is consumed.
  absl::StatusOr<std::string> Compile(LoweredKernel& lowered);
  // The binary of the adstack sizing max-reduction kernel for `shape` (see
  // codegen/llvm/max_reduce_kernel.h), entry kMaxReduceEntry.
  absl::StatusOr<std::string> CompileMaxReduce(const MaxReduceShape& shape);
  // The binary of a device-side graph loop's kernels (see
  // codegen/llvm/graph_loop_kernels.h), calling `set_condition`.
  absl::StatusOr<std::string> CompileGraphLoopKernels(
      const std::string& set_condition);

  // The entries Compile adds for `tasks`, which its binary defines.
  static std::vector<std::string> EntryNames(
      const std::vector<CompiledTask>& tasks);

  GpuCompiler(std::unique_ptr<GpuTarget> target,
              std::unique_ptr<llvm::TargetMachine> machine,
              std::string device_library);

 private:
  absl::StatusOr<std::string> Emit(llvm::Module& module);

  std::unique_ptr<GpuTarget> target_;
  std::unique_ptr<llvm::TargetMachine> machine_;
  std::string triple_;
  std::string data_layout_;  // the target machine's
  std::string lowering_layout_;
  std::string device_library_;  // the bitcode's bytes
};

// Registers an LLVM target's parts (target info, target, MC layer, printer)
// once per process.
template <void (*... kInitializers)()>
void InitializeLlvmTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] { (kInitializers(), ...); });
}

// The bytes of the first of `paths` that can be read; nothing when none can.
std::optional<std::string> ReadFirstFile(const std::vector<std::string>& paths);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_GPU_COMPILER_H_
