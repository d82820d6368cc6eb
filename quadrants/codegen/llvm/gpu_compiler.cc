#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/codegen/llvm/graph_loop_kernels.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetOptions.h"
#include "quadrants/codegen/llvm/optimize.h"
#include "quadrants/codegen/llvm/runtime_linker.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::codegen {

absl::Status GpuTarget::Unavailable(absl::string_view reason) const {
  return MakeError(ErrorKind::kUnavailable,
                   absl::StrCat(spec_.platform, " not available: ", reason));
}

absl::StatusOr<std::string> GpuTarget::ReadDeviceLibrary(
    const std::vector<std::string>& dirs, absl::string_view file,
    absl::string_view what, absl::string_view hint) const {
  std::vector<std::string> paths;
  for (const std::string& dir : dirs)
    paths.push_back(absl::StrCat(dir, "/", file));
  if (std::optional<std::string> bytes = ReadFirstFile(paths))
    return *std::move(bytes);
  return Unavailable(absl::StrCat(what, " was not found; looked at ",
                                  absl::StrJoin(paths, ", "), ". ", hint));
}

absl::StatusOr<std::unique_ptr<GpuCompiler>> GpuCompiler::Create(
    std::unique_ptr<GpuTarget> target) {
  const GpuTargetSpec& spec = target->spec();
  std::string error;
  const llvm::Target* llvm_target =
      llvm::TargetRegistry::lookupTarget(spec.llvm.triple, error);
  if (llvm_target == nullptr) {
    return target->Unavailable(
        absl::StrCat("LLVM has no ", spec.llvm.name, " target: ", error));
  }
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target->createTargetMachine(
      spec.llvm.triple, spec.cpu, spec.features, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (machine == nullptr) {
    return target->Unavailable(
        absl::StrCat("LLVM cannot generate code for ", spec.machine));
  }
  QD_ASSIGN_OR_RETURN(std::string device_library, target->LoadTools());
  return std::make_unique<GpuCompiler>(std::move(target), std::move(machine),
                                       std::move(device_library));
}

GpuCompiler::GpuCompiler(std::unique_ptr<GpuTarget> target,
                         std::unique_ptr<llvm::TargetMachine> machine,
                         std::string device_library)
    : target_(std::move(target)),
      machine_(std::move(machine)),
      triple_(target_->spec().llvm.triple),
      data_layout_(machine_->createDataLayout().getStringRepresentation()),
      lowering_layout_(target_->LoweringLayout(data_layout_)),
      device_library_(std::move(device_library)) {}

absl::StatusOr<std::string> GpuCompiler::Compile(LoweredKernel& lowered) {
  llvm::Module& module = *lowered.module;
  const std::vector<std::string> entries =
      AddGpuEntries(module, lowered.data.tasks, target_->spec().entries);
  QD_RETURN_IF_ERROR(LinkRuntime(module, runtime_bitcode(), entries));
  QD_RETURN_IF_ERROR(LinkRuntime(module, device_library(), entries));
  // Kernels lowered with another layout take the target's from here on.
  module.setDataLayout(data_layout_);
  QD_RETURN_IF_ERROR(target_->FinishKernel(module));
  return Emit(module);
}

absl::StatusOr<std::string> GpuCompiler::CompileMaxReduce(
    const MaxReduceShape& shape) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = BuildMaxReduceKernel(
      shape, target_->spec().entries, context, triple_, data_layout_);
  target_->TuneMaxReduce(*module->getFunction(kMaxReduceEntry), shape);
  return Emit(*module);
}

absl::StatusOr<std::string> GpuCompiler::CompileGraphLoopKernels(
    const std::string& set_condition) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module =
      BuildGraphLoopKernels(target_->spec().entries, context, triple_,
                            data_layout_, set_condition);
  return Emit(*module);
}

absl::StatusOr<std::string> GpuCompiler::Emit(llvm::Module& module) {
  const GpuTargetSpec& spec = target_->spec();
  target_->PrepareModule(module);
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(module, &stream)) {
    return MakeError(ErrorKind::kCompilation,
                     absl::StrCat("internal error: invalid ", spec.llvm.name,
                                  " module: ", problems));
  }
  OptimizeModule(module, *machine_);
  llvm::SmallString<0> emitted;
  llvm::raw_svector_ostream out(emitted);
  llvm::legacy::PassManager passes;
  if (machine_->addPassesToEmitFile(passes, out, nullptr,
                                    spec.output.file_type)) {
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat("internal error: LLVM cannot emit ", spec.output.name));
  }
  passes.run(module);
  return target_->Package(emitted.str());
}

std::vector<std::string> GpuCompiler::EntryNames(
    const std::vector<CompiledTask>& tasks) {
  std::vector<std::string> entries;
  for (const CompiledTask& task : tasks) {
    entries.push_back(GpuEntryName(task.function));
    if (!task.bounds_function.empty()) {
      entries.push_back(GpuEntryName(task.bounds_function));
      entries.push_back(GpuDeviceRangeEntryName(task.function));
    }
  }
  return entries;
}

std::optional<std::string> ReadFirstFile(
    const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
      continue;
    std::stringstream bytes;
    bytes << file.rdbuf();
    return bytes.str();
  }
  return std::nullopt;
}

}  // namespace quadrants::codegen
