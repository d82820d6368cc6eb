#ifndef QUADRANTS_CODEGEN_LLVM_GRAPH_LOOP_KERNELS_H_
#define QUADRANTS_CODEGEN_LLVM_GRAPH_LOOP_KERNELS_H_

#include <memory>
#include <string>

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "quadrants/codegen/llvm/gpu_entries.h"

namespace quadrants::codegen {

inline constexpr char kGraphLoopArmEntry[] = "qd_graph_loop_arm";
inline constexpr char kGraphLoopCheckEntry[] = "qd_graph_loop_check";

// The kernels of a loop that runs on the device inside a graph (a CUDA
// conditional while node), each launched with one thread:
//   void qd_graph_loop_arm(i64 handle)
//     sets the loop's condition to 1 right before the loop node, so its
//     body runs at least once (do-while) whenever the node is reached;
//   void qd_graph_loop_check(i64 handle, i32** slot)
//     the body's last node: sets the condition to **slot != 0, the
//     counter the slot points at (the slot lets one graph serve any
//     counter array).
// Both call `set_condition` (void(i64 handle, i32 value)), which the
// driver binds when it loads the module (CUDA's cudaGraphSetConditional).
std::unique_ptr<llvm::Module> BuildGraphLoopKernels(
    const GpuEntryTarget& target, llvm::LLVMContext& context,
    const std::string& triple, const std::string& data_layout,
    const std::string& set_condition);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_GRAPH_LOOP_KERNELS_H_
