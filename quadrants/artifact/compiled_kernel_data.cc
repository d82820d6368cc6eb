#include "quadrants/artifact/compiled_kernel_data.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "quadrants/ir/walk.h"

namespace quadrants {

std::string NdarraySiteName(const ir::Kernel& kernel, int arg) {
  return absl::StrCat("ndarray '", kernel.params()[arg].name, "' (argument ",
                      arg, ")");
}

namespace {

void AddOnce(int value, std::vector<int>* values) {
  if (std::find(values->begin(), values->end(), value) == values->end())
    values->push_back(value);
}

// "fields 'x', 'y'": the fields stored under `snode`.
std::string FieldsUnder(const ir::SNodeTree& snodes, int snode) {
  std::vector<std::string> names;
  std::vector<int> stack = {snode};
  while (!stack.empty()) {
    const ir::SNode& n = snodes.node(stack.back());
    stack.pop_back();
    if (n.kind == ir::SNode::Kind::kPlace && !n.hidden)
      names.push_back(absl::StrCat("'", n.name, "'"));
    for (auto it = n.children.rbegin(); it != n.children.rend(); ++it)
      stack.push_back(*it);
  }
  return absl::StrCat(names.size() == 1 ? "field " : "fields ",
                      absl::StrJoin(names, ", "));
}

}  // namespace

std::string PoolSiteName(const ir::SNodeTree& snodes, int level) {
  return absl::StrCat("the pool of ", ir::SNodeKindName(snodes.node(level).kind),
                      " SNode ", level, " (holding ",
                      FieldsUnder(snodes, level), ")");
}

std::string FieldSiteName(const ir::SNodeTree& snodes, int snode) {
  const ir::SNode& place = snodes.node(snode);
  if (place.hidden) {
    for (int id = 0; id < snodes.size(); ++id) {
      const ir::SNode& n = snodes.node(id);
      if (n.table == snode || n.length == snode || n.list == snode ||
          n.list_count == snode) {
        return absl::StrCat(
            n.length == snode ? "the length" : "the cells", " of ",
            ir::SNodeKindName(n.kind), " SNode ", id, " (holding ",
            FieldsUnder(snodes, id), ")");
      }
    }
  }
  return absl::StrCat("field '", place.name, "'");
}

LaunchFacts DescribeLaunch(const ir::Kernel& lowered) {
  LaunchFacts facts;
  facts.kernel_name = lowered.name();
  facts.params = lowered.params();
  ir::WalkKernel(lowered, [&](const ir::Stmt* s) {
    facts.draws_random = facts.draws_random || ir::Isa<ir::RandomStmt>(s);
    facts.uses_fields = facts.uses_fields || ir::Isa<ir::FieldPtrStmt>(s) ||
                        ir::Isa<ir::SNodeOpStmt>(s) ||
                        ir::Isa<ir::StructForStmt>(s);
    if (const auto* task = ir::DynCast<ir::OffloadedTaskStmt>(s))
      facts.uses_fields = facts.uses_fields || task->snode_id() >= 0;
    if (!ir::Isa<ir::GlobalStoreStmt>(s) && !ir::Isa<ir::AtomicOpStmt>(s))
      return;
    const ir::Stmt* ptr = s->operand(0);
    if (const auto* field = ir::DynCast<ir::FieldPtrStmt>(ptr))
      AddOnce(field->snode_id(), &facts.written_snodes);
    else if (const auto* array = ir::DynCast<ir::NdarrayPtrStmt>(ptr))
      AddOnce(array->arg(), &facts.written_args);
  });
  for (const auto& stmt : *lowered.body()) {
    facts.adstack_gates.emplace_back();
    const auto* task = ir::DynCast<ir::OffloadedTaskStmt>(stmt.get());
    for (size_t k = 0; task != nullptr && k < task->body()->size(); ++k) {
      if (const auto* row =
              ir::DynCast<ir::AdStackRowStmt>(task->body()->at(k)))
        facts.adstack_gates.back() = row->gate();
    }
  }
  return facts;
}

CompiledTask DescribeTask(const ir::OffloadedTaskStmt& task,
                          const ir::SNodeTree& snodes) {
  CompiledTask out;
  out.kind = task.task_kind();
  out.loc = task.loc();
  out.graph_region = task.graph_region();
  out.graph_section = task.graph_section();
  out.block_dim = task.block_dim();
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
