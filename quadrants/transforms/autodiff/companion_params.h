#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_COMPANION_PARAMS_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_COMPANION_PARAMS_H_

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "quadrants/ir/kernel.h"

namespace quadrants::transforms::autodiff {

// Appends one ndarray parameter per float ndarray parameter of `kernel`
// (named name + `suffix`, same dtype and ndim), in parameter order: the
// adjoints of reverse mode, the duals of forward mode. Returns the index
// of each one's companion by the parameter's index.
absl::flat_hash_map<int, int> AddCompanionNdarrayParams(
    ir::Kernel& kernel, absl::string_view suffix);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_COMPANION_PARAMS_H_
