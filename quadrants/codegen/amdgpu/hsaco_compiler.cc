#include "quadrants/codegen/amdgpu/hsaco_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicsAMDGPU.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/TargetParser.h"
#include "quadrants/codegen/llvm/optimize.h"
#include "quadrants/codegen/llvm/runtime_linker.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/llvm/runtime_module/runtime_amdgcn.h"

extern char** environ;

namespace quadrants::codegen {
namespace {

constexpr char kTriple[] = "amdgcn-amd-amdhsa";
// Code object version 5, what LLVM 19 and current ROCm runtimes default to.
constexpr int kCodeObjectVersion = 500;
// The AMDGPU private (per-thread) address space, where allocas live.
constexpr unsigned kPrivateAddressSpace = 5;
// Offsets in the HSA kernel dispatch packet (hsa_kernel_dispatch_packet_t)
// of workgroup_size_x (u16) and grid_size_x (u32, in work-items).
constexpr int kWorkgroupSizeXOffset = 4;
constexpr int kGridSizeXOffset = 12;

absl::Status Unavailable(absl::string_view reason) {
  return MakeError(ErrorKind::kUnavailable,
                   absl::StrCat("AMDGPU not available: ", reason));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return absl::NotFoundError(path);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

absl::StatusOr<std::string> ReadOcml() {
  std::vector<std::string> dirs;
  for (const char* env : {"HIP_DEVICE_LIB_PATH", "ROCM_PATH"}) {
    if (const char* value = std::getenv(env); value && *value) {
      dirs.push_back(env == std::string("ROCM_PATH")
                         ? absl::StrCat(value, "/amdgcn/bitcode")
                         : value);
    }
  }
  for (const char* dir :
       {"/opt/rocm/amdgcn/bitcode", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
        "/usr/lib/amdgcn/bitcode"}) {
    dirs.push_back(dir);
  }
  std::vector<std::string> tried;
  for (const std::string& dir : dirs) {
    const std::string path = dir + "/ocml.bc";
    absl::StatusOr<std::string> bytes = ReadFile(path);
    if (bytes.ok())
      return bytes;
    tried.push_back(path);
  }
  return Unavailable(absl::StrCat(
      "ocml.bc (the ROCm device math library, Debian package "
      "rocm-device-libs) was not found; looked at ",
      absl::StrJoin(tried, ", "), ". Set ROCM_PATH to the ROCm directory"));
}

absl::StatusOr<std::string> FindLld() {
  std::vector<std::string> candidates;
  if (const char* value = std::getenv("QD_LLD"); value && *value)
    candidates.push_back(value);
  candidates.push_back("/usr/lib/llvm-19/bin/ld.lld");
  candidates.push_back("/usr/bin/ld.lld-19");
  for (const std::string& path : candidates) {
    if (access(path.c_str(), X_OK) == 0)
      return path;
  }
  return Unavailable(absl::StrCat(
      "ld.lld (LLVM's linker, Debian package lld-19) was not found; looked at ",
      absl::StrJoin(candidates, ", "), ". Set QD_LLD to its path"));
}

// Runs `argv` with stdout and stderr in `log`; the exit status, or an error
// when it cannot start.
absl::StatusOr<int> Run(const std::vector<std::string>& argv,
                        const std::string& log) {
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return absl::InternalError(absl::StrCat("cannot run ", argv[0]));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return absl::InternalError(absl::StrCat("cannot wait for ", argv[0]));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A directory for one link's files, removed with them.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Create() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(base && *base ? base : "/tmp", "/quadrants_hsaco_XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr)
      return absl::InternalError("cannot create a temporary directory");
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  ~TempDir() {
    if (path_.empty())
      return;
    for (const char* name : {"/kernel.o", "/kernel.hsaco", "/lld.log"})
      unlink((path_ + name).c_str());
    rmdir(path_.c_str());
  }
  std::string File(const char* name) const { return path_ + "/" + name; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

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

HsacoCompiler::HsacoCompiler(std::unique_ptr<llvm::TargetMachine> machine,
                             std::string gfx_target, std::string ocml,
                             std::string lld)
    : machine_(std::move(machine)),
      gfx_target_(std::move(gfx_target)),
      ocml_(std::move(ocml)),
      lld_(std::move(lld)),
      triple_(kTriple),
      data_layout_(machine_->createDataLayout().getStringRepresentation()),
      lowering_layout_(absl::StrReplaceAll(data_layout_, {{"-A5", ""}})),
      description_(
          absl::StrCat(gfx_target_, " wave64 cov", kCodeObjectVersion / 100)) {}

absl::StatusOr<std::unique_ptr<HsacoCompiler>> HsacoCompiler::Create(
    const std::string& gfx_target) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
  });
  if (llvm::AMDGPU::parseArchAMDGCN(gfx_target) == llvm::AMDGPU::GK_NONE ||
      AmdgpuIsaVersion(gfx_target) < 0) {
    return Unavailable(absl::StrCat("LLVM does not know the AMD GPU '",
                                    gfx_target,
                                    "' (expected e.g. gfx90a, gfx942, "
                                    "gfx1100)"));
  }
  std::string error;
  const llvm::Target* target =
      llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (target == nullptr)
    return Unavailable(absl::StrCat("LLVM has no AMDGPU target: ", error));
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kTriple, gfx_target, "+wavefrontsize64", llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (machine == nullptr) {
    return Unavailable(
        absl::StrCat("LLVM cannot generate code for ", gfx_target));
  }
  QD_ASSIGN_OR_RETURN(std::string ocml, ReadOcml());
  QD_ASSIGN_OR_RETURN(std::string lld, FindLld());
  return std::make_unique<HsacoCompiler>(std::move(machine), gfx_target,
                                         std::move(ocml), std::move(lld));
}

absl::StatusOr<std::string> HsacoCompiler::Compile(LoweredKernel& lowered) {
  llvm::Module& module = *lowered.module;
  const std::vector<std::string> entries =
      AddGpuEntries(module, lowered.tasks, AmdgpuEntries());
  QD_RETURN_IF_ERROR(LinkRuntime(
      module,
      absl::MakeConstSpan(kRuntimeBitcodeAmdgcn, kRuntimeBitcodeAmdgcn_size),
      entries));
  QD_RETURN_IF_ERROR(LinkRuntime(
      module,
      absl::MakeConstSpan(reinterpret_cast<const unsigned char*>(ocml_.data()),
                          ocml_.size()),
      entries));
  module.setDataLayout(data_layout_);
  MoveAllocasToPrivate(module);
  QD_RETURN_IF_ERROR(DefineOclcControls(module, AmdgpuIsaVersion(gfx_target_)));
  return EmitCodeObject(module);
}

absl::StatusOr<std::string> HsacoCompiler::CompileMaxReduce(
    const MaxReduceShape& shape) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = BuildMaxReduceKernel(
      shape, AmdgpuEntries(), context, triple_, data_layout_);
  return EmitCodeObject(*module);
}

absl::StatusOr<std::string> HsacoCompiler::EmitCodeObject(
    llvm::Module& module) {
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
    fn.addFnAttr("target-cpu", gfx_target_);
    fn.addFnAttr("target-features", "+wavefrontsize64");
  }
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(module, &stream)) {
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat("internal error: invalid AMDGPU module: ", problems));
  }
  OptimizeModule(module, *machine_);
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream out(object);
  llvm::legacy::PassManager passes;
  if (machine_->addPassesToEmitFile(passes, out, nullptr,
                                    llvm::CodeGenFileType::ObjectFile)) {
    return MakeError(ErrorKind::kCompilation,
                     "internal error: LLVM cannot emit an AMDGPU object");
  }
  passes.run(module);

  // ld.lld turns the relocatable object into the shared object the loader
  // takes.
  absl::StatusOr<TempDir> dir = TempDir::Create();
  if (!dir.ok()) {
    return MakeError(ErrorKind::kCompilation,
                     absl::StrCat("linking the AMDGPU code object: ",
                                  dir.status().message()));
  }
  const std::string input = dir->File("kernel.o");
  const std::string output = dir->File("kernel.hsaco");
  const std::string log = dir->File("lld.log");
  {
    std::ofstream file(input, std::ios::binary);
    file.write(object.data(), static_cast<std::streamsize>(object.size()));
    if (!file) {
      return MakeError(ErrorKind::kCompilation,
                       absl::StrCat("linking the AMDGPU code object: cannot "
                                    "write ",
                                    input));
    }
  }
  absl::StatusOr<int> exit = Run({lld_, "-flavor", "gnu", "-shared",
                                  "--no-undefined", input, "-o", output},
                                 log);
  if (!exit.ok() || *exit != 0) {
    absl::StatusOr<std::string> message = ReadFile(log);
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat("linking the AMDGPU code object with ", lld_, " failed",
                     exit.ok() ? absl::StrCat(" (exit ", *exit, ")")
                               : absl::StrCat(": ", exit.status().message()),
                     message.ok() ? absl::StrCat(": ", *message) : ""));
  }
  absl::StatusOr<std::string> hsaco = ReadFile(output);
  if (!hsaco.ok()) {
    return MakeError(ErrorKind::kCompilation,
                     absl::StrCat("linking the AMDGPU code object: ld.lld "
                                  "wrote no ",
                                  output));
  }
  return hsaco;
}

}  // namespace quadrants::codegen
