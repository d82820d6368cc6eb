#include "quadrants/codegen/amdgpu/amdgcn_simt.h"
#include "quadrants/codegen/amdgpu/hsaco_compiler.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicsAMDGPU.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/TargetParser.h"
#include "quadrants/codegen/amdgpu/lld_link.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/options.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/device_runtime/runtime_amdgcn.h"

namespace quadrants::codegen {
namespace {

// Code object version 5, what LLVM 19 and current ROCm runtimes default to.
constexpr int kCodeObjectVersion = 500;
// The AMDGPU private (per-thread) address space, where allocas live.
constexpr unsigned kPrivateAddressSpace = 5;
// Offsets in the HSA kernel dispatch packet (hsa_kernel_dispatch_packet_t)
// of workgroup_size_x (u16) and grid_size_x (u32, in work-items).
constexpr int kWorkgroupSizeXOffset = 4;
constexpr int kGridSizeXOffset = 12;

// Where ROCm's device libraries may be installed, in order.
std::vector<std::string> DeviceLibraryDirs() {
  std::vector<std::string> dirs;
  if (auto dir = options::EnvText(options::Option::kHipDeviceLibPath))
    dirs.push_back(*dir);
  if (auto rocm = options::EnvText(options::Option::kRocmPath))
    dirs.push_back(absl::StrCat(*rocm, "/amdgcn/bitcode"));
  for (const char* dir :
       {"/opt/rocm/amdgcn/bitcode", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
        "/usr/lib/amdgcn/bitcode"}) {
    dirs.push_back(dir);
  }
  return dirs;
}

// An i64 value of the dispatch packet at `offset`, read as `type`.
llvm::Value* DispatchField(llvm::IRBuilder<>& b, int offset, llvm::Type* type) {
  llvm::Module* module = b.GetInsertBlock()->getModule();
  llvm::Value* packet = b.CreateCall(llvm::Intrinsic::getDeclaration(
      module, llvm::Intrinsic::amdgcn_dispatch_ptr));
  llvm::Value* field =
      b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), packet, offset);
  return b.CreateZExt(b.CreateLoad(type, field), b.getInt64Ty());
}

llvm::Value* Id(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id) {
  llvm::Module* module = b.GetInsertBlock()->getModule();
  return b.CreateZExt(b.CreateCall(llvm::Intrinsic::getDeclaration(module, id)),
                      b.getInt64Ty());
}

// The AMDGPU spelling of the kernel entries: work-item and work-group ids,
// sizes from the dispatch packet, the amdgpu_kernel calling convention
// (which gives each entry its kernel descriptor and argument metadata).
GpuEntryTarget AmdgpuEntries() {
  GpuEntryTarget target;
  target.thread_index = [](llvm::IRBuilder<>& b) {
    return b.CreateAdd(
        b.CreateMul(Id(b, llvm::Intrinsic::amdgcn_workgroup_id_x),
                    DispatchField(b, kWorkgroupSizeXOffset, b.getInt16Ty())),
        Id(b, llvm::Intrinsic::amdgcn_workitem_id_x));
  };
  target.thread_count = [](llvm::IRBuilder<>& b) {
    return DispatchField(b, kGridSizeXOffset, b.getInt32Ty());
  };
  target.mark_kernel = [](llvm::Function* entry) {
    entry->setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
  };
  target.global_address_space = 1;
  return target;
}

// Kernels are lowered with allocas in the generic address space; AMDGPU
// keeps them in the private one, reached from generic pointers by a cast
// (which InferAddressSpaces folds back into private accesses).
void MoveAllocasToPrivate(llvm::Module& module) {
  std::vector<llvm::AllocaInst*> allocas;
  for (llvm::Function& fn : module) {
    for (llvm::Instruction& inst : llvm::instructions(fn)) {
      auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst);
      if (alloca && alloca->getAddressSpace() != kPrivateAddressSpace)
        allocas.push_back(alloca);
    }
  }
  for (llvm::AllocaInst* alloca : allocas) {
    llvm::IRBuilder<> b(alloca);
    llvm::AllocaInst* moved =
        b.CreateAlloca(alloca->getAllocatedType(), kPrivateAddressSpace,
                       alloca->getArraySize());
    moved->setAlignment(alloca->getAlign());
    moved->takeName(alloca);
    alloca->replaceAllUsesWith(b.CreateAddrSpaceCast(moved, alloca->getType()));
    alloca->eraseFromParent();
  }
}

// Defines the device library's control constants (declared, normally
// linked from the oclc_*.bc files) for `isa_version`: IEEE behaviour
// (no finite-only, unsafe or flush-to-zero math, correctly rounded f32
// sqrt) as on the CPU, wave64.
absl::Status DefineOclcControls(llvm::Module& module, int isa_version) {
  for (llvm::GlobalVariable& global : module.globals()) {
    if (!global.isDeclaration() || !global.getName().starts_with("__oclc_"))
      continue;
    const std::string name = global.getName().str();
    int64_t value = 0;
    if (name == "__oclc_ISA_version")
      value = isa_version;
    else if (name == "__oclc_wavefrontsize64" ||
             name == "__oclc_correctly_rounded_sqrt32")
      value = 1;
    else if (name == "__oclc_ABI_version")
      value = kCodeObjectVersion;
    else if (name != "__oclc_finite_only_opt" && name != "__oclc_daz_opt" &&
             name != "__oclc_unsafe_math_opt")
      return MakeError(ErrorKind::kCompilation,
                       absl::StrCat("internal error: the device library "
                                    "needs an unknown control constant ",
                                    name));
    auto* type = llvm::dyn_cast<llvm::IntegerType>(global.getValueType());
    if (type == nullptr) {
      return MakeError(ErrorKind::kCompilation,
                       absl::StrCat("internal error: ", name,
                                    " is not an integer constant"));
    }
    global.setInitializer(llvm::ConstantInt::get(type, value));
    global.setConstant(true);
    global.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  return absl::OkStatus();
}

// The AMDGPU hooks: ocml for math with its control constants defined here,
// private allocas, every function compiled for the one GPU, and ld.lld
// linking the object into a code object.
class AmdgpuTarget : public GpuTarget {
 public:
  explicit AmdgpuTarget(const std::string& gfx_target)
      : GpuTarget(Spec(gfx_target)) {}

  absl::StatusOr<std::string> LoadTools() override {
    QD_ASSIGN_OR_RETURN(
        std::string ocml,
        ReadDeviceLibrary(DeviceLibraryDirs(), "ocml.bc",
                          "ocml.bc (the ROCm device math library, Debian "
                          "package rocm-device-libs)",
                          "Set ROCM_PATH to the ROCm directory"));
    absl::StatusOr<std::string> lld = FindLld();
    if (!lld.ok())
      return Unavailable(lld.status().message());
    lld_ = *std::move(lld);
    return ocml;
  }
  // Allocas are lowered in the generic address space (FinishKernel moves
  // them to the private one).
  std::string LoweringLayout(const std::string& layout) const override {
    return absl::StrReplaceAll(layout, {{"-A5", ""}});
  }
  absl::Status FinishKernel(llvm::Module& module) const override {
    MoveAllocasToPrivate(module);
    return DefineOclcControls(module, AmdgpuIsaVersion(spec().cpu));
  }
  void PrepareModule(llvm::Module& module) const override {
    // The runtime module, built by clang for amdgcn, carries the flag too.
    if (!module.getModuleFlag("amdhsa_code_object_version")) {
      module.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version",
                           static_cast<uint32_t>(kCodeObjectVersion));
    }
    // The runtime module and ocml are built for no particular GPU: every
    // function is compiled for this one, so all of them inline.
    for (llvm::Function& fn : module) {
      if (fn.isDeclaration())
        continue;
      fn.addFnAttr("target-cpu", spec().cpu);
      fn.addFnAttr("target-features", spec().features);
    }
  }
  absl::StatusOr<std::string> Package(llvm::StringRef object) const override {
    return LinkCodeObject(lld_, object);
  }

 private:
  static GpuTargetSpec Spec(const std::string& gfx_target) {
    GpuTargetSpec spec;
    spec.platform = "AMDGPU";
    spec.llvm = {"AMDGPU", "amdgcn-amd-amdhsa"};
    spec.cpu = spec.machine = gfx_target;
    spec.features = "+wavefrontsize64";
    spec.description =
        absl::StrCat(gfx_target, " wave64 cov", kCodeObjectVersion / 100);
    spec.output = {llvm::CodeGenFileType::ObjectFile, "an AMDGPU object"};
    spec.entries = AmdgpuEntries();
    spec.simt = AmdgcnSimt();
    spec.runtime_bitcode =
        absl::MakeConstSpan(kRuntimeBitcodeAmdgcn, kRuntimeBitcodeAmdgcn_size);
    return spec;
  }

  std::string lld_;  // path of ld.lld
};

}  // namespace

int AmdgpuIsaVersion(const std::string& gfx_target) {
  // gfx<major: 1-2 digits><minor: digit><stepping: hex digit>
  if (gfx_target.size() < 6 || gfx_target.size() > 7 ||
      gfx_target.compare(0, 3, "gfx") != 0) {
    return -1;
  }
  const std::string digits = gfx_target.substr(3);
  const std::string major = digits.substr(0, digits.size() - 2);
  const char minor = digits[digits.size() - 2];
  const char stepping = digits.back();
  for (char c : major) {
    if (c < '0' || c > '9')
      return -1;
  }
  if (minor < '0' || minor > '9' || !std::isxdigit(stepping))
    return -1;
  const int step = std::isdigit(stepping) ? stepping - '0'
                                          : std::tolower(stepping) - 'a' + 10;
  return std::stoi(major) * 1000 + (minor - '0') * 100 + step;
}

absl::StatusOr<std::unique_ptr<GpuCompiler>> CreateHsacoCompiler(
    const std::string& gfx_target) {
  InitializeLlvmTargetOnce<
      LLVMInitializeAMDGPUTargetInfo, LLVMInitializeAMDGPUTarget,
      LLVMInitializeAMDGPUTargetMC, LLVMInitializeAMDGPUAsmPrinter>();
  auto target = std::make_unique<AmdgpuTarget>(gfx_target);
  if (llvm::AMDGPU::parseArchAMDGCN(gfx_target) == llvm::AMDGPU::GK_NONE ||
      AmdgpuIsaVersion(gfx_target) < 0) {
    return target->Unavailable(
        absl::StrCat("LLVM does not know the AMD GPU '", gfx_target,
                     "' (expected e.g. gfx90a, gfx942, gfx1100)"));
  }
  return GpuCompiler::Create(std::move(target));
}

}  // namespace quadrants::codegen
