#include "quadrants/artifact/compiled_kernel_data.h"

#include "absl/strings/str_cat.h"

namespace quadrants {

std::string NdarraySiteName(const ir::Kernel& kernel, int arg) {
  return absl::StrCat("ndarray '", kernel.params()[arg].name, "' (argument ",
                      arg, ")");
}

std::string FieldSiteName(const ir::SNodeTree& snodes, int snode) {
  return absl::StrCat("field '", snodes.node(snode).name, "'");
}

CompiledTask DescribeTask(const ir::OffloadedTaskStmt& task,
                          const ir::SNodeTree& snodes) {
  CompiledTask out;
  out.kind = task.task_kind();
  out.loc = task.loc();
  if (out.kind == ir::TaskKind::kStructFor)
    out.struct_for_cells = snodes.NumCells(task.snode_id());
  return out;
}

std::vector<std::vector<AdStackSpec>> CompiledKernelData::TaskAdStacks()
    const {
  std::vector<std::vector<AdStackSpec>> stacks;
  stacks.reserve(tasks.size());
  for (const CompiledTask& task : tasks)
    stacks.push_back(task.adstacks);
  return stacks;
}

}  // namespace quadrants
