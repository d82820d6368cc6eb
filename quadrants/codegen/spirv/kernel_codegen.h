#ifndef QUADRANTS_CODEGEN_SPIRV_KERNEL_CODEGEN_H_
#define QUADRANTS_CODEGEN_SPIRV_KERNEL_CODEGEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "quadrants/adstack/stack_spec.h"
#include "quadrants/codegen/spirv/device_caps.h"
#include "quadrants/common/source_location.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/op_kinds.h"
#include "quadrants/ir/print_format.h"
#include "quadrants/ir/snode.h"
#include "quadrants/artifact/compiled_kernel_data.h"

namespace quadrants::codegen::spirv {

struct CodegenOptions {
  DeviceCaps caps;
  bool check_out_of_bound = false;  // index checks on every access
  bool debug = false;               // assert statements
  // ad_stack_size forces every adstack's capacity: pushes check it.
  bool adstack_size_forced = false;
  adstack::BoundsCheckPolicy adstack_checks() const {
    return {debug, check_out_of_bound, adstack_size_forced};
  }
  // Every field as text (part of compile-cache keys).
  std::string ToString() const;
};

// One offloaded task as SPIR-V compute shaders (entry point "main", push
// constants holding the launch context's address; see shader_abi.h):
// - `code` runs the task: once (serial, one invocation), or grid-stride
//   over its iterations (range_for: the range its bounds shader recorded;
//   struct_for: the field's cells);
// - `bounds_code` (range_for only) runs the task's prologue in one
//   invocation and records the range and the dispatch size for the task.
struct SpirvTask {
  std::vector<uint32_t> code;
  std::vector<uint32_t> bounds_code;
};

// A kernel's shaders and its description. The tasks' adstack records
// (shader_abi.h) follow each other in task order. `data.binary` stays empty
// until the modules are final and packed into it (PackModules).
struct SpirvKernel {
  std::vector<SpirvTask> tasks;  // parallel to data.tasks
  CompiledKernelData data;
};

// The modules of every task as one binary: per task, the task module and
// the bounds module (empty for tasks without one), each as a word count
// followed by the words.
std::string PackModules(const std::vector<SpirvTask>& tasks);
// The modules `PackModules` packed for `num_tasks` tasks, in the same order;
// a DataLoss error when the bytes are not such a list.
absl::StatusOr<std::vector<SpirvTask>> UnpackModules(absl::string_view binary,
                                                     size_t num_tasks);

// Lowers a kernel of offloaded tasks to one SPIR-V module per shader. Types
// the device lacks are a compilation error naming the type and the feature.
absl::StatusOr<SpirvKernel> GenerateSpirv(const ir::Kernel& kernel,
                                          const ir::SNodeTree& snodes,
                                          const CodegenOptions& options);

}  // namespace quadrants::codegen::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_KERNEL_CODEGEN_H_
