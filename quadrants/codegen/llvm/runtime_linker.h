#ifndef QUADRANTS_CODEGEN_LLVM_RUNTIME_LINKER_H_
#define QUADRANTS_CODEGEN_LLVM_RUNTIME_LINKER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "llvm/IR/Module.h"

namespace quadrants::codegen {

// Links the runtime module `bitcode` (see device_runtime) into
// `module`, pulling in only the qd_* helpers it calls, and makes every
// function other than `entry_points` internal so the optimizer inlines and
// drops them.
absl::Status LinkRuntime(llvm::Module& module,
                         absl::Span<const unsigned char> bitcode,
                         const std::vector<std::string>& entry_points);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_RUNTIME_LINKER_H_
