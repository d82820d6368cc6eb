#ifndef QUADRANTS_CODEGEN_LLVM_LOWERED_KERNEL_H_
#define QUADRANTS_CODEGEN_LLVM_LOWERED_KERNEL_H_

#include <memory>

#include "llvm/IR/Module.h"
#include "quadrants/artifact/compiled_kernel_data.h"

namespace quadrants::codegen {

// A kernel lowered to one LLVM module, before the target compiler runs.
// Each offloaded task is a pair of functions in `module`:
//   void <function>(QdLaunchContext* ctx, i64 begin, i64 end, i32 thread_id)
// runs iterations [begin, end) (a serial task ignores the range), and, for
// range_for tasks,
//   void <bounds_function>(QdLaunchContext* ctx, i64* out)
// writes the iteration range to out[0], out[1] right before dispatch.
// `data` describes the tasks; its binary is empty until the target
// compiler fills it from `module`.
struct LoweredKernel {
  std::unique_ptr<llvm::Module> module;
  CompiledKernelData data;
};

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_LOWERED_KERNEL_H_
