#ifndef QUADRANTS_CODEGEN_LLVM_LANE_EMITTER_H_
#define QUADRANTS_CODEGEN_LLVM_LANE_EMITTER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "llvm/IR/Module.h"
#include "quadrants/adstack/stack_spec.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/ir/statements.h"

namespace quadrants::codegen {

// Registers per value: a task of at most kWideGangStatements statements
// that compute (locals and constants emit no work of their own)
// runs four vectors of independent iterations per step, so a loop-carried
// chain (an adstack recurrence is one) has four dependency chains in flight
// per thread instead of waiting on each result's latency (ISPC's
// multi-width gangs). Measured on AVX-512 (the adstack recurrence
// benchmark, forward + reverse): 1.46x from one register to two, and 1.55x
// more from two to four. A larger body has parallelism of its own within an
// iteration and gets two: four would mostly add register pressure and
// compile time (instruction selection and register allocation grow with
// the width; the gradient fuzzer's kernels compiled 1.5x slower).
constexpr int kWideGangStatements = 128;
int RegistersPerValue(const ir::OffloadedTaskStmt& task);

// Lanes per step for `task` on registers of `vector_bits`: one 32-bit
// element per 32 bits, or one 64-bit element per 64 when the task computes
// with 64-bit values, times RegistersPerValue (AVX-512: 64 or 32 for a
// small task).
int LaneCount(const ir::OffloadedTaskStmt& task, int vector_bits);

// Emits a parallel task as `name`, with the scalar task function's
// signature (ctx, begin, end, thread_id), that runs `lanes` consecutive
// iterations per step in SIMD lanes (SPMD, as ISPC does): values that vary
// per iteration are vectors, varying branches and loop exits become lane
// masks, contiguous accesses are vector loads and stores, others gathers
// and scatters, and adstacks interleave their lanes so a push of all lanes
// is one vector store. Stack `k` of thread `t`'s lane `l` lives in thread
// t's block of `lanes` thread slices. Appends the task's stacks to
// `stacks`. `task_index` is the task's position in the kernel, which
// qd.random() streams mix in. The caller checks LaneLoweringObstacle first.
// Returns how many f32 sin/cos pairs of one value share one vector evaluation.
absl::StatusOr<int> EmitLaneTask(llvm::Module& module, const ir::Kernel& kernel,
                                 const ir::SNodeTree& snodes,
                                 const ir::OffloadedTaskStmt& task,
                                 int task_index, int lanes, int vector_bits,
                                 const adstack::BoundsCheckPolicy& adstack_checks,
                                 const std::string& name,
                                 std::vector<AdStackSpec>* stacks);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_LANE_EMITTER_H_
