#ifndef QUADRANTS_IR_CLONER_H_
#define QUADRANTS_IR_CLONER_H_

#include <memory>

#include "absl/container/flat_hash_map.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/stmt.h"

namespace quadrants::ir {

// A deep copy of the whole kernel; operands point into the copy.
std::unique_ptr<Kernel> CloneKernel(const Kernel& kernel);

// A deep copy of `stmt` and its blocks, not yet inserted anywhere. Operands
// that refer to statements inside `stmt` are remapped to their copies;
// operands outside it are kept, or remapped through `remap` when present
// there. `remap` receives the old -> new mapping of every copied statement.
std::unique_ptr<Stmt> CloneStmt(
    const Stmt& stmt, absl::flat_hash_map<const Stmt*, Stmt*>* remap = nullptr);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_CLONER_H_
