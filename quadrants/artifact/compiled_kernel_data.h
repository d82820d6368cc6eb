#ifndef QUADRANTS_ARTIFACT_COMPILED_KERNEL_DATA_H_
#define QUADRANTS_ARTIFACT_COMPILED_KERNEL_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "quadrants/common/source_location.h"
#include "quadrants/ir/adstack_gate.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/op_kinds.h"
#include "quadrants/ir/print_format.h"
#include "quadrants/ir/size_expr.h"
#include "quadrants/ir/snode.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/types.h"

namespace quadrants {

// One adstack of a task. Its storage, per thread, is an i64 count followed
// by `capacity` slots of `slot_bytes` (a float slot holds the primal, and
// its adjoint where the sweep reads one back).
struct AdStackSpec {
  ir::PrimitiveType dtype = ir::PrimitiveType::kF32;
  int64_t slot_bytes = 0;
  int64_t static_capacity = 0;  // 0: decided at launch
  ir::SizeExpr::Ptr size_expr;  // the launch-time capacity, when captured
  SourceLocation loc;           // the loop the stack serves
  // Stacks of one loop the launch may checkpoint share a group (-1: none);
  // `checkpoints` marks the stacks of its segment-start states (see
  // ir::AdStackRole).
  int checkpoint_group = -1;
  bool checkpoints = false;
};

// A place in a kernel that can raise a run-time error, so the host can
// name it.
struct ErrorSite {
  std::string description;  // e.g. "ndarray 'a' (argument 0)"
  SourceLocation loc;
  // Types of the values an assertion reports (floats travel as f64 bits).
  std::vector<ir::PrimitiveType> value_types;
};

// One offloaded task of a compiled kernel. A serial task runs once; a
// range_for task runs the iterations its bounds entry computes right
// before dispatch; a struct_for task runs one iteration per field cell.
struct CompiledTask {
  ir::TaskKind kind = ir::TaskKind::kSerial;
  // The task's entry point in the kernel's binary, and the entry that
  // computes a range_for's iteration range (empty otherwise). For LLVM
  // targets these are symbol names; for SPIR-V, entry points of the task's
  // modules.
  std::string function;
  std::string bounds_function;
  int64_t struct_for_cells = 0;  // struct_for: iterations
  // Iterations `function` runs together in SIMD lanes (CPU); 0 when it
  // runs them one at a time. Each thread then owns `simd_lanes` adstack
  // thread slices.
  int simd_lanes = 0;
  // The qd.graph.parallel() section the task belongs to (see
  // ir::Stmt::graph_section): a graph runs the sections of a region as
  // branches joined after them. -1 outside sections.
  int graph_region = -1;
  int graph_section = -1;
  // Threads per GPU block (qd.loop_config(block_dim=)); 0 lets the
  // launcher choose. Bytes of block-shared memory its shared arrays take,
  // given to the launch (CUDA's dynamic shared memory).
  int block_dim = 0;
  int64_t shared_bytes = 0;
  SourceLocation loc;
  std::vector<AdStackSpec> adstacks;  // ids are positions in this list
};

// How error reports name an ndarray argument and a field.
std::string NdarraySiteName(const ir::Kernel& kernel, int arg);
std::string FieldSiteName(const ir::SNodeTree& snodes, int snode);
// How pool exhaustion names a pointer or dynamic level: by its fields.
std::string PoolSiteName(const ir::SNodeTree& snodes, int level);

// A task's kind, location and struct-for cell count; code generators add
// the entry points and adstacks.
CompiledTask DescribeTask(const ir::OffloadedTaskStmt& task,
                          const ir::SNodeTree& snodes);

// What a launch needs to know of the lowered kernel an artifact came from,
// so that a cached artifact launches without its IR.
struct LaunchFacts {
  std::string kernel_name;
  std::vector<ir::KernelParam> params;
  // What the kernel may write: field places and ndarray parameter indices
  // (generation counters are bumped for these only).
  std::vector<int> written_snodes;
  std::vector<int> written_args;
  // Whether the kernel calls qd.random(): only then does its launch
  // context carry the launch's random key.
  bool draws_random = false;
  // Whether the kernel addresses field memory (the SNode layout is then
  // compiled into it).
  bool uses_fields = false;
  // Per task: the gate of its adstack heap (see ir::AdStackRowStmt), if
  // its stacks are used only under one.
  std::vector<absl::optional<ir::AdStackGate>> adstack_gates;
};

// The launch facts of a lowered (offloaded) kernel.
LaunchFacts DescribeLaunch(const ir::Kernel& lowered);

// What a code generator produces for one kernel, whatever its target: the
// target binary and everything a launch reads besides it. The offline
// cache stores exactly this; launchers consume it.
struct CompiledKernelData {
  // The target's code: a relocatable object (CPU), PTX (CUDA), a code
  // object (AMDGPU) or packed SPIR-V modules (Vulkan). Empty until the
  // target compiler has run.
  std::string binary;
  std::vector<CompiledTask> tasks;
  std::vector<ErrorSite> error_sites;
  // What each print record's site id stands for.
  std::vector<ir::PrintSite> print_sites;
  LaunchFacts facts;

  // The adstacks of each task, in task order.
  std::vector<std::vector<AdStackSpec>> TaskAdStacks() const;
};

}  // namespace quadrants

#endif  // QUADRANTS_ARTIFACT_COMPILED_KERNEL_DATA_H_
