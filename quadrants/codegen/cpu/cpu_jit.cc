#include "quadrants/codegen/cpu/cpu_jit.h"

#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::codegen {
namespace {

absl::Status JitError(absl::string_view what, llvm::Error error) {
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat(what, ": ", llvm::toString(std::move(error))));
}

}  // namespace

CpuJit::CpuJit(std::unique_ptr<llvm::orc::LLJIT> jit,
               std::unique_ptr<llvm::TargetMachine> machine)
    : jit_(std::move(jit)), machine_(std::move(machine)) {
  triple_ = machine_->getTargetTriple().str();
  data_layout_ = machine_->createDataLayout().getStringRepresentation();
}

namespace {

absl::StatusOr<llvm::orc::JITTargetMachineBuilder> HostMachineBuilder() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return JitError("cannot detect the host CPU", builder.takeError());
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return std::move(*builder);
}

}  // namespace

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>>
CpuJit::NewTargetMachine() {
  QD_ASSIGN_OR_RETURN(llvm::orc::JITTargetMachineBuilder builder,
                      HostMachineBuilder());
  auto machine = builder.createTargetMachine();
  if (!machine)
    return JitError("cannot create a host target machine", machine.takeError());
  return std::move(*machine);
}

absl::StatusOr<std::unique_ptr<CpuJit>> CpuJit::Create() {
  QD_ASSIGN_OR_RETURN(llvm::orc::JITTargetMachineBuilder builder,
                      HostMachineBuilder());
  QD_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> machine,
                      NewTargetMachine());
  auto jit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(builder).create();
  if (!jit)
    return JitError("cannot create the ORC JIT", jit.takeError());
  return std::make_unique<CpuJit>(std::move(*jit), std::move(machine));
}

absl::StatusOr<llvm::orc::JITDylib*> CpuJit::NewDylib(std::string* name) {
  *name = absl::StrCat("qd_kernel_", next_dylib_++);
  auto dylib = jit_->createJITDylib(*name);
  if (!dylib)
    return JitError("cannot create a JIT dylib", dylib.takeError());
  // Math helpers call into the C library of this process.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit_->getDataLayout().getGlobalPrefix());
  if (!process)
    return JitError("cannot search process symbols", process.takeError());
  dylib->addGenerator(std::move(*process));
  return &*dylib;
}

absl::StatusOr<std::string> CpuJit::EmitObject(llvm::Module& module) {
  return EmitObject(module, *machine_);
}

absl::StatusOr<std::string> CpuJit::EmitObject(llvm::Module& module,
                                               llvm::TargetMachine& machine) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, stream, nullptr,
                                  llvm::CodeGenFileType::ObjectFile)) {
    return MakeError(ErrorKind::kRuntime,
                     "the host target cannot emit object files");
  }
  passes.run(module);
  return std::string(buffer.begin(), buffer.end());
}

absl::StatusOr<std::string> CpuJit::AddObjects(
    const std::vector<std::string>& objects) {
  std::string name;
  QD_ASSIGN_OR_RETURN(llvm::orc::JITDylib * dylib, NewDylib(&name));
  for (const std::string& object : objects) {
    if (llvm::Error error = jit_->addObjectFile(
            *dylib, llvm::MemoryBuffer::getMemBufferCopy(object, name))) {
      return JitError("cannot add a kernel object to the JIT",
                      std::move(error));
    }
  }
  return name;
}

int CpuJit::VectorBits() const {
  const std::string features = machine_->getTargetFeatureString().str();
  auto has = [&](const char* feature) {
    return absl::StrContains(absl::StrCat(features, ","),
                             absl::StrCat("+", feature, ","));
  };
  if (has("avx512f"))
    return 512;
  return has("avx") ? 256 : 128;
}

std::string CpuJit::TargetDescription() const {
  return absl::StrCat(triple_, " ", machine_->getTargetCPU().str(), " ",
                      machine_->getTargetFeatureString().str(), " ",
                      data_layout_);
}

absl::StatusOr<void*> CpuJit::Lookup(const std::string& dylib,
                                     const std::string& symbol) {
  llvm::orc::JITDylib* jd = jit_->getJITDylibByName(dylib);
  if (jd == nullptr) {
    return MakeError(ErrorKind::kRuntime, absl::StrCat("no JIT dylib ", dylib));
  }
  auto address = jit_->lookup(*jd, symbol);
  if (!address)
    return JitError(absl::StrCat("cannot find ", symbol), address.takeError());
  return address->toPtr<void*>();
}

}  // namespace quadrants::codegen
