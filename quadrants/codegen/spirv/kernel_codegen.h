#ifndef QUADRANTS_CODEGEN_SPIRV_KERNEL_CODEGEN_H_
#define QUADRANTS_CODEGEN_SPIRV_KERNEL_CODEGEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/codegen/spirv/device_caps.h"
#include "quadrants/common/source_location.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/op_kinds.h"
#include "quadrants/ir/print_format.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/backend.h"

namespace quadrants::spirv {

struct CodegenOptions {
  DeviceCaps caps;
  bool check_out_of_bound = false;  // index checks on every access
  bool debug = false;               // assert statements
  // ad_stack_size forces every adstack's capacity: pushes check it.
  bool ad_stack_size_forced = false;
  // Every field as text (part of compile-cache keys).
  std::string ToString() const;
};

// One offloaded task as SPIR-V compute shaders (entry point "main", push
// constants holding the launch context's address; see gfx_abi.h):
// - `code` runs the task: once (serial, one invocation), or grid-stride
//   over its iterations (range_for: the range its bounds shader recorded;
//   struct_for: the field's cells);
// - `bounds_code` (range_for only) runs the task's prologue in one
//   invocation and records the range and the dispatch size for the task.
struct SpirvTask {
  ir::TaskKind kind = ir::TaskKind::kSerial;
  std::vector<uint32_t> code;
  std::vector<uint32_t> bounds_code;
  int64_t struct_for_cells = 0;
  SourceLocation loc;
  // The task's adstacks, by id; their records (gfx_abi.h) follow each
  // other in task order.
  std::vector<AdStackInfo> ad_stacks;
};

struct SpirvKernel {
  std::vector<SpirvTask> tasks;
  std::vector<RuntimeErrorSite> error_sites;
  std::vector<ir::PrintSite> print_sites;
};

// Lowers a kernel of offloaded tasks to one SPIR-V module per shader. Types
// the device lacks are a compilation error naming the type and the feature.
absl::StatusOr<SpirvKernel> GenerateSpirv(const ir::Kernel& kernel,
                                          const ir::SNodeTree& snodes,
                                          const CodegenOptions& options);

}  // namespace quadrants::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_KERNEL_CODEGEN_H_
