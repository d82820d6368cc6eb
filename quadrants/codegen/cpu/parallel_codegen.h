#ifndef QUADRANTS_CODEGEN_CPU_PARALLEL_CODEGEN_H_
#define QUADRANTS_CODEGEN_CPU_PARALLEL_CODEGEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "llvm/IR/Module.h"
#include "quadrants/codegen/llvm/optimize.h"

namespace quadrants::codegen {

// Compiles a lowered kernel module (runtime not yet linked) to one host
// object per group of `partitions` (each a list of its entry points), the
// groups on threads of their own: each gets a copy of the module holding
// only its entry points' definitions, in its own LLVM context, linked with
// the runtime `bitcode`, optimized with `vectorizers` and emitted. Objects
// come back in the order of `partitions`; together they define every entry
// point once, and nothing else is visible outside its object.
absl::StatusOr<std::vector<std::string>> CompileInPartitions(
    const llvm::Module& module,
    const std::vector<std::vector<std::string>>& partitions,
    absl::Span<const unsigned char> bitcode, Vectorizers vectorizers);

// The CPU artifact's binary for `objects`: the object itself when there is
// one, else the objects framed so that UnpackObjects returns them.
std::string PackObjects(const std::vector<std::string>& objects);
std::vector<std::string> UnpackObjects(const std::string& binary);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_CPU_PARALLEL_CODEGEN_H_
