#include "quadrants/codegen/cuda/ptx_compiler.h"

#include <dlfcn.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/Support/TargetSelect.h"
#include "quadrants/codegen/cuda/nvptx_simt.h"
#include "quadrants/codegen/llvm/gpu_entries.h"
#include "quadrants/codegen/llvm/max_reduce_kernel.h"
#include "quadrants/common/options.h"
#include "quadrants/device_runtime/runtime_nvptx64.h"

namespace quadrants::codegen {
namespace {

// The newest PTX ISA (as LLVM's "ptxNN" feature) that a driver of
// `driver_version` (e.g. 12040) loads, capped at what LLVM 19 emits.
int PtxVersion(int driver_version) {
  const int major = driver_version / 1000;
  const int minor = (driver_version % 1000) / 10;
  int ptx = 0;
  if (major >= 13)
    ptx = 90;
  else if (major == 12)
    ptx = 80 + std::min(minor, 8);
  else if (major == 11)
    ptx = 70 + std::min(minor, 8);
  else
    ptx = 63;
  return std::min(ptx, 85);
}

// The CUDA files a wheel ships next to the binary holding this code (the
// core module's _cuda/, with libdevice), or nothing outside a wheel.
std::optional<std::string> BundledToolkitRoot() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&BundledToolkitRoot), &info) == 0 ||
      info.dli_fname == nullptr) {
    return std::nullopt;
  }
  const std::string binary = info.dli_fname;
  const size_t slash = binary.rfind('/');
  if (slash == std::string::npos)
    return std::nullopt;
  return binary.substr(0, slash) + "/_cuda";
}

// Where a CUDA toolkit may be installed, in order: the user's choice, what
// the wheel ships, the usual places.
std::vector<std::string> ToolkitRoots() {
  std::vector<std::string> roots;
  for (options::Option option :
       {options::Option::kCudaHome, options::Option::kCudaPath}) {
    if (auto root = options::EnvText(option))
      roots.push_back(*root);
  }
  if (std::optional<std::string> bundled = BundledToolkitRoot())
    roots.push_back(*bundled);
  for (const char* root : {"/usr/local/cuda", "/usr/lib/nvidia-cuda-toolkit",
                           "/usr/lib/cuda", "/opt/cuda"}) {
    roots.push_back(root);
  }
  return roots;
}

llvm::Value* SpecialRegister(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id) {
  llvm::Module* module = b.GetInsertBlock()->getModule();
  return b.CreateZExt(b.CreateCall(llvm::Intrinsic::getDeclaration(module, id)),
                      b.getInt64Ty());
}

void Annotate(llvm::Function* fn, const char* key, int value) {
  llvm::Module& module = *fn->getParent();
  llvm::LLVMContext& context = module.getContext();
  llvm::Metadata* operands[] = {
      llvm::ValueAsMetadata::get(fn), llvm::MDString::get(context, key),
      llvm::ValueAsMetadata::get(
          llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), value))};
  module.getOrInsertNamedMetadata("nvvm.annotations")
      ->addOperand(llvm::MDNode::get(context, operands));
}

void MarkKernel(llvm::Function* fn) {
  Annotate(fn, "kernel", 1);
}

// The signed maximum of `value` over the full warp, by butterfly shuffles
// of its two 32-bit halves.
llvm::Value* WarpMax(llvm::IRBuilder<>& b, llvm::Value* value) {
  llvm::Function* shuffle =
      llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(),
                                      llvm::Intrinsic::nvvm_shfl_sync_bfly_i32);
  for (int lanes = 16; lanes >= 1; lanes /= 2) {
    llvm::Value* halves[2] = {
        b.CreateTrunc(value, b.getInt32Ty()),
        b.CreateTrunc(b.CreateLShr(value, 32), b.getInt32Ty())};
    for (llvm::Value*& half : halves) {
      half = b.CreateCall(
          shuffle, {b.getInt32(-1), half, b.getInt32(lanes), b.getInt32(0x1f)});
    }
    llvm::Value* other =
        b.CreateOr(b.CreateZExt(halves[0], b.getInt64Ty()),
                   b.CreateShl(b.CreateZExt(halves[1], b.getInt64Ty()), 32));
    value = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, value, other);
  }
  return value;
}

// The NVPTX spelling of the kernel entries: the global thread index from
// the block and thread ids, and nvvm.annotations marking kernels.
GpuEntryTarget NvptxEntries() {
  GpuEntryTarget target;
  target.thread_index = [](llvm::IRBuilder<>& b) {
    return b.CreateAdd(
        b.CreateMul(
            SpecialRegister(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x),
            SpecialRegister(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x)),
        SpecialRegister(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  };
  target.thread_count = [](llvm::IRBuilder<>& b) {
    return b.CreateMul(
        SpecialRegister(b, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x),
        SpecialRegister(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x));
  };
  target.mark_kernel = MarkKernel;
  target.subgroup_max = WarpMax;
  target.global_address_space = 1;
  target.subgroup_leader = [](llvm::IRBuilder<>& b) {
    return b.CreateICmpEQ(
        SpecialRegister(b, llvm::Intrinsic::nvvm_read_ptx_sreg_laneid),
        b.getInt64(0));
  };
  return target;
}

// The NVPTX hooks: the toolkit's libdevice for math, nvvm.annotations for
// launch bounds, PTX text as the binary.
class NvptxTarget : public GpuTarget {
 public:
  NvptxTarget(int compute_capability, int driver_version)
      : GpuTarget(Spec(compute_capability, driver_version)) {}

  absl::StatusOr<std::string> LoadTools() override {
    return ReadDeviceLibrary(
        ToolkitRoots(), "nvvm/libdevice/libdevice.10.bc",
        "libdevice.10.bc (the CUDA toolkit's math library)",
        "Set CUDA_HOME to the toolkit directory");
  }
  // libdevice asks __nvvm_reflect whether denormals flush to zero: they do
  // not, matching the CPU.
  absl::Status FinishKernel(llvm::Module& module) const override {
    module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz",
                         static_cast<uint32_t>(0));
    return absl::OkStatus();
  }
  // A full SM of threads keeps the most loads in flight: cap the registers
  // so that 2048 threads fit. 32-bit indices fit the cap without spills.
  void TuneMaxReduce(llvm::Function& entry,
                     const MaxReduceShape& shape) const override {
    Annotate(&entry, "maxntidx", kMaxReduceBlock);
    if (shape.narrow)
      Annotate(&entry, "minctasm", 2048 / kMaxReduceBlock);
  }
  absl::StatusOr<std::string> Package(llvm::StringRef ptx) const override {
    return ptx.str();
  }

 private:
  static GpuTargetSpec Spec(int compute_capability, int driver_version) {
    GpuTargetSpec spec;
    spec.platform = "CUDA";
    spec.llvm = {"NVPTX", "nvptx64-nvidia-cuda"};
    spec.cpu = absl::StrCat("sm_", compute_capability);
    spec.features = absl::StrCat("+ptx", PtxVersion(driver_version));
    spec.machine = spec.description =
        absl::StrCat(spec.cpu, " ", spec.features);
    spec.output = {llvm::CodeGenFileType::AssemblyFile, "PTX"};
    spec.entries = NvptxEntries();
    spec.simt = NvptxSimt();
    spec.runtime_bitcode = absl::MakeConstSpan(kRuntimeBitcodeNvptx64,
                                               kRuntimeBitcodeNvptx64_size);
    spec.warp_aggregate_atomics = true;
    return spec;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<GpuCompiler>> CreatePtxCompiler(
    int compute_capability, int driver_version) {
  InitializeLlvmTargetOnce<
      LLVMInitializeNVPTXTargetInfo, LLVMInitializeNVPTXTarget,
      LLVMInitializeNVPTXTargetMC, LLVMInitializeNVPTXAsmPrinter>();
  return GpuCompiler::Create(
      std::make_unique<NvptxTarget>(compute_capability, driver_version));
}

}  // namespace quadrants::codegen
