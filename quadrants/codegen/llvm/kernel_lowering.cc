#include "quadrants/codegen/llvm/kernel_lowering.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "quadrants/codegen/llvm/function_emitter.h"
#include "quadrants/codegen/llvm/lane_emitter.h"
#include "quadrants/codegen/llvm/lane_forms.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/logging.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::codegen {
namespace {

// "_<name>" with the characters a symbol cannot hold replaced by '_', so a
// task named by qd.loop_config(name=...) shows its name in profilers;
// empty for an unnamed task.
std::string SymbolSuffix(const std::string& name) {
  if (name.empty())
    return "";
  std::string suffix = "_";
  for (char c : name) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '_';
    suffix.push_back(word ? c : '_');
  }
  return suffix;
}

// Emits `task` in SIMD lanes when it can (setting out->simd_lanes), and
// says at debug level which tasks stay scalar and why.
void TryLaneLowering(llvm::Module& module, const ir::Kernel& kernel,
                     const ir::SNodeTree& snodes,
                     const ir::OffloadedTaskStmt& task, int task_index,
                     const LoweringOptions& options, CompiledTask* out) {
  std::string obstacle =
      LaneLoweringObstacle(task, options.check_out_of_bound, options.debug);
  const std::string what =
      absl::StrCat("kernel '", kernel.name(), "' ", out->function, " (",
                   task.loc().ToString(), ")");
  if (obstacle.empty()) {
    const int lanes = LaneCount(task, options.simd_vector_bits);
    absl::StatusOr<int> pairs =
        EmitLaneTask(module, kernel, snodes, task, task_index, lanes,
                     options.simd_vector_bits, options.adstack_checks(),
                     out->function, &out->adstacks);
    if (pairs.ok()) {
      out->simd_lanes = lanes;
      QD_LOG(DEBUG) << what << " runs " << lanes << " iterations per step in "
                    << "SIMD lanes (" << RegistersPerValue(task)
                    << " registers of " << lanes / RegistersPerValue(task)
                    << ")"
                    << (*pairs > 0 ? absl::StrCat("; ", *pairs,
                                                  " sin/cos pair(s) of one "
                                                  "value evaluated together")
                                   : "");
      return;
    }
    if (llvm::Function* partial = module.getFunction(out->function))
      partial->eraseFromParent();
    out->adstacks.clear();
    obstacle = std::string(pairs.status().message());
  }
  QD_LOG(DEBUG) << what << " runs one iteration at a time: " << obstacle;
}

}  // namespace

std::string LoweringOptions::ToString() const {
  return absl::StrCat(
      "bounds=", check_out_of_bound, " debug=", debug,
      " forced=", adstack_size_forced, " interleave=", interleave_adstacks,
      " warp_atomics=", warp_aggregate_atomics, " simd_bits=", simd_vector_bits,
      " simt=", simt != nullptr, " triple=", triple, " layout=", data_layout);
}

absl::StatusOr<LoweredKernel> LowerKernel(const ir::Kernel& kernel,
                                          const ir::SNodeTree& snodes,
                                          const LoweringOptions& options,
                                          llvm::LLVMContext& context) {
  LoweredKernel lowered;
  lowered.data.facts = DescribeLaunch(kernel);
  lowered.module = std::make_unique<llvm::Module>(kernel.name(), context);
  lowered.module->setTargetTriple(options.triple);
  lowered.module->setDataLayout(options.data_layout);
  FunctionEmitter emitter(*lowered.module, kernel, snodes, options,
                          lowered.data.error_sites, lowered.data.print_sites);
  QD_ASSIGN_OR_RETURN(std::vector<const ir::OffloadedTaskStmt*> tasks,
                      ir::OffloadedTasks(kernel));
  QD_RETURN_IF_ERROR(emitter.EmitRealFunctions());
  for (size_t t = 0; t < tasks.size(); ++t) {
    const ir::OffloadedTaskStmt* task = tasks[t];
    CompiledTask out = DescribeTask(*task, snodes);
    out.function = absl::StrCat("qd_task", t, "_", ir::TaskKindName(out.kind),
                                SymbolSuffix(task->loop_name()));
    if (options.simd_vector_bits > 0)
      TryLaneLowering(*lowered.module, kernel, snodes, *task,
                      static_cast<int>(t), options, &out);
    if (out.simd_lanes == 0) {
      emitter.set_task_stacks(&out.adstacks);
      emitter.set_task_index(static_cast<int>(t));
      if (absl::Status s = emitter.EmitTask(*task, out.function); !s.ok())
        return s;
      out.shared_bytes = emitter.task_shared_bytes();
    }
    if (out.kind == ir::TaskKind::kRangeFor) {
      out.bounds_function = out.function + "_bounds";
      if (absl::Status s = emitter.EmitBounds(*task, out.bounds_function);
          !s.ok()) {
        return s;
      }
    }
    lowered.data.tasks.push_back(std::move(out));
  }
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(*lowered.module, &stream)) {
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat("internal compiler error: invalid LLVM IR for "
                     "kernel '",
                     kernel.name(), "': ", stream.str()));
  }
  return lowered;
}

}  // namespace quadrants::codegen
