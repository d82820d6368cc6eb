#ifndef QUADRANTS_CODEGEN_LLVM_GPU_ENTRIES_H_
#define QUADRANTS_CODEGEN_LLVM_GPU_ENTRIES_H_

#include <functional>
#include <string>
#include <vector>

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"

namespace quadrants::codegen {

// How one GPU target spells what the kernel entries need.
struct GpuEntryTarget {
  // The global index of the running thread, and the number of threads the
  // launch runs, as i64.
  std::function<llvm::Value*(llvm::IRBuilder<>&)> thread_index;
  std::function<llvm::Value*(llvm::IRBuilder<>&)> thread_count;
  // Makes `entry` a kernel the driver can launch.
  std::function<void(llvm::Function*)> mark_kernel;
  // Optional: the signed maximum of an i64 over the running thread's
  // subgroup (warp), every thread of which calls it, and whether the
  // running thread is the subgroup's first.
  std::function<llvm::Value*(llvm::IRBuilder<>&, llvm::Value*)> subgroup_max;
  std::function<llvm::Value*(llvm::IRBuilder<>&)> subgroup_leader;
  // The address space of device memory, for loads the backend can route
  // through its global (and read-only) paths.
  unsigned global_address_space = 0;
};

// Adds the kernel entries the shared GPU launcher calls for each task:
//   void <function>_entry(QdLaunchContext* ctx, i64 begin, i64 end)
// calls <function>(ctx, i, i + 1, thread) for i = begin + thread, stepping by
// the number of threads launched, where `thread` is the global thread index
// (the adstack slice); a range task's bounds run on the device through
//   void <bounds_function>_entry(QdLaunchContext* ctx, i64* out)
// and
//   void <function>_device_range_entry(QdLaunchContext* ctx)
// finds its range on the device, for launches the host does not wait on
// (queued tasks, graph replays). Returns the entries' names.
std::vector<std::string> AddGpuEntries(llvm::Module& module,
                                       const std::vector<CompiledTask>& tasks,
                                       const GpuEntryTarget& target);

inline std::string GpuEntryName(const std::string& function) {
  return function + "_entry";
}
inline std::string GpuDeviceRangeEntryName(const std::string& function) {
  return function + "_device_range_entry";
}

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_GPU_ENTRIES_H_
