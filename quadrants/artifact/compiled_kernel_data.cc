#include "quadrants/artifact/compiled_kernel_data.h"

namespace quadrants {

std::vector<std::vector<AdStackSpec>> CompiledKernelData::TaskAdStacks()
    const {
  std::vector<std::vector<AdStackSpec>> stacks;
  stacks.reserve(tasks.size());
  for (const CompiledTask& task : tasks)
    stacks.push_back(task.ad_stacks);
  return stacks;
}

}  // namespace quadrants
