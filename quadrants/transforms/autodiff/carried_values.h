#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_CARRIED_VALUES_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_CARRIED_VALUES_H_

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/types/optional.h"
#include "quadrants/ir/stmt.h"

namespace quadrants::transforms::autodiff {

// Local variables declared outside `loop` and written inside it.
absl::flat_hash_set<const ir::Stmt*> WrittenVariables(const ir::Stmt& loop);

// The values one iteration hands to the next: variables written in `loop`
// that an iteration may read before writing them. (Python scoping declares
// every local at the top of its region, so a per-iteration temporary is
// also "declared outside" the loop; it is not carried, since each
// iteration assigns it before use.)
absl::flat_hash_set<const ir::Stmt*> CarriedVariables(const ir::Stmt& loop);

// Why reversing `loop` needs the primal values of each iteration (which only
// the adstack can replay), or nothing when its body is linear in the values
// it carries: a carried value feeding a non-linear op, used as an index,
// deciding a branch or bounding an inner loop; a while loop (its trip count
// depends on carried state); a break.
absl::optional<std::string> NeedsPerIterationPrimals(const ir::Stmt& loop);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_CARRIED_VALUES_H_
