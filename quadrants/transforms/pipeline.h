#ifndef QUADRANTS_TRANSFORMS_PIPELINE_H_
#define QUADRANTS_TRANSFORMS_PIPELINE_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/transforms/type_check.h"

namespace quadrants::transforms {

// Which derivative kernel the pipeline produces, if any: kHvp is forward
// mode over the reverse-mode kernel (tangents of the adjoints: Hessian-
// vector products).
enum class AutodiffMode { kNone, kReverse, kForward, kHvp };

struct PipelineOptions {
  TypeCheckOptions types;
  // Runs the verifier after every pass; on by default in debug builds.
#ifdef NDEBUG
  bool verify_each_pass = false;
#else
  bool verify_each_pass = true;
#endif
  const ir::SNodeTree* snodes = nullptr;
  // Produce the reverse-mode gradient kernel or the forward-mode tangent
  // kernel instead (both need `snodes`).
  AutodiffMode autodiff = AutodiffMode::kNone;
  bool adstack_enabled = false;
  // See ReverseModeOptions::stack_trig_derivatives.
  bool stack_trig_derivatives = false;
  // See ReverseModeOptions::checkpointing.
  bool checkpointing = true;
  // Keeps stores nothing reads, and so the reads that feed them: with
  // bounds checks on, an out-of-range read reports even when its value ends
  // up unused, and an adstack overflows as the program is written.
  bool keep_dead_stores = false;
};

// The front half of compilation: type check, simplify, CSE, DCE, offload,
// optionally autodiff (reverse or forward mode), and a final cleanup, leaving a
// kernel of offloaded tasks for a backend.
absl::Status LowerToTasks(ir::Kernel& kernel,
                          const PipelineOptions& options = {});

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_PIPELINE_H_
