#include "quadrants/transforms/pipeline.h"

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/transforms/autodiff/adstack_gate.h"
#include "quadrants/transforms/autodiff/forward_mode.h"
#include "quadrants/transforms/autodiff/reverse_mode.h"
#include "quadrants/transforms/cse.h"
#include "quadrants/transforms/dce.h"
#include "quadrants/transforms/dead_stores.h"
#include "quadrants/transforms/offload.h"
#include "quadrants/transforms/promote_locals.h"
#include "quadrants/transforms/simplify.h"
#include "quadrants/transforms/sparse.h"

namespace quadrants::transforms {
namespace {

absl::Status VerifyAfter(const ir::Kernel& kernel,
                         const PipelineOptions& options,
                         absl::string_view pass) {
  if (!options.verify_each_pass)
    return absl::OkStatus();
  absl::Status status =
      ir::Verify(kernel, {.require_types = true, .snodes = options.snodes});
  if (status.ok())
    return status;
  return MakeError(ErrorKind::kCompilation,
                   absl::StrCat("internal compiler error after pass '", pass,
                                "': ", status.message(), "\nIR:\n",
                                ir::PrintKernel(kernel)));
}

void Cleanup(ir::Kernel& kernel, const PipelineOptions& options) {
  bool changed = true;
  while (changed) {
    changed = Simplify(kernel);
    changed |= EliminateCommonSubexpressions(kernel);
    if (!options.keep_dead_stores)
      changed |= EliminateDeadStores(kernel);
    changed |= EliminateDeadCode(kernel);
  }
}

// Functions are typed and cleaned like a kernel body; they are never
// offloaded (calls run inside the tasks that make them).
absl::Status LowerFunctions(ir::Kernel& kernel,
                            const PipelineOptions& options) {
  for (const auto& function : kernel.functions()) {
    if (options.autodiff != AutodiffMode::kNone) {
      return MakeError(
          ErrorKind::kCompilation, function->loc(),
          absl::StrCat("kernel '", kernel.name(), "' calls qd.real_func '",
                       function->name(),
                       "', which cannot be differentiated; use a qd.func "
                       "(inlined) in kernels that need gradients"));
    }
    QD_RETURN_IF_ERROR(TypeCheck(function->scope(), options.types));
    Cleanup(function->scope(), options);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LowerToTasks(ir::Kernel& kernel, const PipelineOptions& options) {
  QD_RETURN_IF_ERROR(
      ir::Verify(kernel, {.require_types = false, .snodes = options.snodes}));
  QD_RETURN_IF_ERROR(LowerFunctions(kernel, options));
  QD_RETURN_IF_ERROR(TypeCheck(kernel, options.types));
  QD_RETURN_IF_ERROR(VerifyAfter(kernel, options, "type_check"));
  Cleanup(kernel, options);
  QD_RETURN_IF_ERROR(VerifyAfter(kernel, options, "simplify"));
  if (PromoteTopLevelLocals(kernel)) {
    Cleanup(kernel, options);
    QD_RETURN_IF_ERROR(VerifyAfter(kernel, options, "promote_locals"));
  }
  QD_RETURN_IF_ERROR(Offload(kernel));
  QD_RETURN_IF_ERROR(VerifyAfter(kernel, options, "offload"));
  Cleanup(kernel, options);
  if (options.autodiff != AutodiffMode::kNone) {
    if (options.snodes == nullptr) {
      return MakeError(ErrorKind::kCompilation,
                       "autodiff needs the SNode tree");
    }
    const bool reverse = options.autodiff == AutodiffMode::kReverse ||
                         options.autodiff == AutodiffMode::kHvp;
    if (reverse) {
      QD_RETURN_IF_ERROR(autodiff::MakeGradKernel(
          kernel, *options.snodes,
          {.adstack_enabled = options.adstack_enabled,
           .stack_trig_derivatives = options.stack_trig_derivatives,
           .checkpointing = options.checkpointing}));
    }
    if (options.autodiff == AutodiffMode::kHvp) {
      Cleanup(kernel, options);
      QD_RETURN_IF_ERROR(VerifyAfter(kernel, options, "reverse_mode"));
    }
    if (!reverse || options.autodiff == AutodiffMode::kHvp)
      QD_RETURN_IF_ERROR(autodiff::MakeForwardKernel(kernel, *options.snodes));
    QD_RETURN_IF_ERROR(VerifyAfter(kernel, options, "autodiff"));
    // Derivative tasks run in order: one section's adjoint may read what
    // another's writes.
    for (const auto& task : *kernel.body())
      task->set_graph_section(-1, -1);
    Cleanup(kernel, options);
    if (reverse) {
      autodiff::GateAdStackHeaps(kernel, *options.snodes);
      QD_RETURN_IF_ERROR(VerifyAfter(kernel, options, "adstack_gate"));
    }
  }
  if (options.snodes != nullptr && options.snodes->has_sparse()) {
    QD_RETURN_IF_ERROR(LowerSparse(kernel, *options.snodes));
    QD_RETURN_IF_ERROR(VerifyAfter(kernel, options, "lower_sparse"));
    Cleanup(kernel, options);
  }
  return VerifyAfter(kernel, options, "cleanup");
}

}  // namespace quadrants::transforms
