#include "quadrants/transforms/autodiff/companion_params.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace quadrants::transforms::autodiff {

absl::flat_hash_map<int, int> AddCompanionNdarrayParams(
    ir::Kernel& kernel, absl::string_view suffix) {
  absl::flat_hash_map<int, int> companions;
  const int num_params = static_cast<int>(kernel.params().size());
  for (int i = 0; i < num_params; ++i) {
    const ir::KernelParam p = kernel.params()[i];
    if (p.kind == ir::KernelParam::Kind::kNdarray && ir::IsFloat(p.dtype)) {
      companions[i] = kernel.AddParam(ir::KernelParam::Ndarray(
          absl::StrCat(p.name, suffix), p.dtype, p.ndim));
    }
  }
  return companions;
}

}  // namespace quadrants::transforms::autodiff
