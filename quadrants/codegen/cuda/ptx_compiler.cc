#include "quadrants/codegen/cuda/ptx_compiler.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetOptions.h"
#include "quadrants/codegen/llvm/gpu_entries.h"
#include "quadrants/codegen/llvm/max_reduce_kernel.h"
#include "quadrants/codegen/llvm/optimize.h"
#include "quadrants/codegen/llvm/runtime_linker.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/llvm/runtime_module/runtime_nvptx64.h"

namespace quadrants::codegen {
namespace {

constexpr char kTriple[] = "nvptx64-nvidia-cuda";

absl::Status Unavailable(absl::string_view reason) {
  return MakeError(ErrorKind::kUnavailable,
                   absl::StrCat("CUDA not available: ", reason));
}

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

absl::StatusOr<std::string> ReadLibdevice() {
  std::vector<std::string> roots;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* value = std::getenv(env); value && *value)
      roots.push_back(value);
  }
  for (const char* root : {"/usr/local/cuda", "/usr/lib/nvidia-cuda-toolkit",
                           "/usr/lib/cuda", "/opt/cuda"}) {
    roots.push_back(root);
  }
  std::vector<std::string> tried;
  for (const std::string& root : roots) {
    const std::string path = root + "/nvvm/libdevice/libdevice.10.bc";
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      tried.push_back(path);
      continue;
    }
    std::stringstream bytes;
    bytes << file.rdbuf();
    return bytes.str();
  }
  return Unavailable(absl::StrCat(
      "libdevice.10.bc (the CUDA toolkit's math library) was not found; "
      "looked at ",
      absl::StrJoin(tried, ", "), ". Set CUDA_HOME to the toolkit directory"));
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

}  // namespace

PtxCompiler::PtxCompiler(std::unique_ptr<llvm::TargetMachine> machine,
                         std::string libdevice, std::string description)
    : machine_(std::move(machine)),
      libdevice_(std::move(libdevice)),
      triple_(kTriple),
      data_layout_(machine_->createDataLayout().getStringRepresentation()),
      description_(std::move(description)) {}

absl::StatusOr<std::unique_ptr<PtxCompiler>> PtxCompiler::Create(
    int compute_capability, int driver_version) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string error;
  const llvm::Target* target =
      llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (target == nullptr)
    return Unavailable(absl::StrCat("LLVM has no NVPTX target: ", error));
  const std::string cpu = absl::StrCat("sm_", compute_capability);
  const std::string features = absl::StrCat("+ptx", PtxVersion(driver_version));
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kTriple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (machine == nullptr) {
    return Unavailable(
        absl::StrCat("LLVM cannot generate code for ", cpu, " ", features));
  }
  QD_ASSIGN_OR_RETURN(std::string libdevice, ReadLibdevice());
  return std::make_unique<PtxCompiler>(std::move(machine), std::move(libdevice),
                                       absl::StrCat(cpu, " ", features));
}

absl::StatusOr<std::string> PtxCompiler::Compile(LoweredKernel& lowered) {
  llvm::Module& module = *lowered.module;
  const std::vector<std::string> entries =
      AddGpuEntries(module, lowered.tasks, NvptxEntries());
  QD_RETURN_IF_ERROR(LinkRuntime(
      module,
      absl::MakeConstSpan(kRuntimeBitcodeNvptx64, kRuntimeBitcodeNvptx64_size),
      entries));
  QD_RETURN_IF_ERROR(
      LinkRuntime(module,
                  absl::MakeConstSpan(
                      reinterpret_cast<const unsigned char*>(libdevice_.data()),
                      libdevice_.size()),
                  entries));
  // libdevice asks __nvvm_reflect whether denormals flush to zero: they
  // do not, matching the CPU.
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz",
                       static_cast<uint32_t>(0));
  return Emit(module);
}

absl::StatusOr<std::string> PtxCompiler::CompileMaxReduce(
    const MaxReduceShape& shape) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = BuildMaxReduceKernel(
      shape, NvptxEntries(), context, triple_, data_layout_);
  // A full SM of threads keeps the most loads in flight: cap the registers
  // so that 2048 threads fit. 32-bit indices fit the cap without spills.
  llvm::Function* fn = module->getFunction(kMaxReduceEntry);
  Annotate(fn, "maxntidx", kMaxReduceBlock);
  if (shape.narrow)
    Annotate(fn, "minctasm", 2048 / kMaxReduceBlock);
  return Emit(*module);
}

absl::StatusOr<std::string> PtxCompiler::Emit(llvm::Module& module) {
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(module, &stream)) {
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat("internal error: invalid NVPTX module: ", problems));
  }
  OptimizeModule(module, *machine_);
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream out(ptx);
  llvm::legacy::PassManager passes;
  if (machine_->addPassesToEmitFile(passes, out, nullptr,
                                    llvm::CodeGenFileType::AssemblyFile)) {
    return MakeError(ErrorKind::kCompilation,
                     "internal error: LLVM cannot emit PTX");
  }
  passes.run(module);
  return std::string(ptx.str());
}

}  // namespace quadrants::codegen
