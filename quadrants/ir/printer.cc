#include "quadrants/ir/printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::ir {
namespace {

std::string ParamText(const KernelParam& p, int index) {
  switch (p.kind) {
    case KernelParam::Kind::kScalar:
      return absl::StrCat("arg", index, " ", p.name, ": ",
                          PrimitiveTypeName(p.dtype));
    case KernelParam::Kind::kNdarray:
      return absl::StrCat("arg", index, " ", p.name, ": ndarray<",
                          PrimitiveTypeName(p.dtype), ", ", p.ndim, ">");
    case KernelParam::Kind::kField:
      return absl::StrCat("arg", index, " ", p.name, ": field<",
                          PrimitiveTypeName(p.dtype), "> snode", p.snode_id);
  }
  return "?";
}

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out + "\"";
}

// The text after "= " for each kind.
std::string Body(const Stmt& s, const StmtNumbering& n) {
  auto op = [&](size_t i) { return n.Name(s.operand(i)); };
  auto list = [&](size_t from) {
    std::vector<std::string> names;
    for (size_t i = from; i < s.num_operands(); ++i)
      names.push_back(op(i));
    return absl::StrJoin(names, ", ");
  };
  const std::string name(StmtKindName(s.kind()));
  switch (s.kind()) {
    case StmtKind::kConst:
      return absl::StrCat(name, " ",
                          static_cast<const ConstStmt&>(s).value().ToString());
    case StmtKind::kGlobalLoad:
      return absl::StrCat(
          name,
          static_cast<const GlobalLoadStmt&>(s).is_volatile() ? " volatile "
                                                              : " ",
          list(0));
    case StmtKind::kArgLoad:
      return absl::StrCat(name, " arg",
                          static_cast<const ArgLoadStmt&>(s).arg());
    case StmtKind::kNdarrayPtr:
      return absl::StrCat(name, " arg",
                          static_cast<const NdarrayPtrStmt&>(s).arg(), "[",
                          list(0), "]");
    case StmtKind::kNdarrayShape: {
      const auto& shape = static_cast<const NdarrayShapeStmt&>(s);
      return absl::StrCat(name, " arg", shape.arg(), ".shape[", shape.axis(),
                          "]");
    }
    case StmtKind::kFieldPtr: {
      const auto& f = static_cast<const FieldPtrStmt&>(s);
      std::vector<std::string> indices;
      for (size_t i = 0; i < f.num_indices(); ++i)
        indices.push_back(op(i));
      return absl::StrCat(name, " snode", f.snode_id(), "[",
                          absl::StrJoin(indices, ", "), "]",
                          f.block() != nullptr
                              ? absl::StrCat(" block ", n.Name(f.block()))
                              : "");
    }
    case StmtKind::kSNodeOp: {
      const auto& o = static_cast<const SNodeOpStmt&>(s);
      return absl::StrCat(
          name, o.op() == SNodeOpKind::kAcquire ? " acquire" : " release",
          " snode", o.snode_id(), " ", op(0));
    }
    case StmtKind::kUnaryOp:
      return absl::StrCat(OpName(static_cast<const UnaryOpStmt&>(s).op()), " ",
                          op(0));
    case StmtKind::kBinaryOp:
      return absl::StrCat(OpName(static_cast<const BinaryOpStmt&>(s).op()), " ",
                          list(0));
    case StmtKind::kAtomicOp:
      return absl::StrCat(OpName(static_cast<const AtomicOpStmt&>(s).op()), " ",
                          list(0));
    case StmtKind::kStructFor:
      return absl::StrCat(name, " snode",
                          static_cast<const StructForStmt&>(s).snode_id());
    case StmtKind::kLoopIndex:
      return absl::StrCat(name, " ", op(0), " axis ",
                          static_cast<const LoopIndexStmt&>(s).axis());
    case StmtKind::kAssert: {
      const auto& a = static_cast<const AssertStmt&>(s);
      std::string text =
          absl::StrCat(name, " ", op(0), ", ", Quoted(a.message()));
      if (s.num_operands() > 1)
        absl::StrAppend(&text, " (", list(1), ")");
      return text;
    }
    case StmtKind::kDebugPrint: {
      // Every piece and spec is printed: the structural hash and the
      // offline cache key are computed from this text.
      const auto& p = static_cast<const DebugPrintStmt&>(s);
      auto at = [](const std::vector<std::string>& list, size_t k) {
        return Quoted(k < list.size() ? list[k] : "?");
      };
      std::string text = absl::StrCat(name, " ", at(p.pieces(), 0));
      for (size_t k = 0; k < s.num_operands(); ++k) {
        absl::StrAppend(&text, ", ", op(k), ":", at(p.specs(), k), ", ",
                        at(p.pieces(), k + 1));
      }
      return text;
    }
    case StmtKind::kOffloadedTask: {
      const auto& task = static_cast<const OffloadedTaskStmt&>(s);
      std::string text =
          absl::StrCat(name, " ", TaskKindName(task.task_kind()));
      if (task.task_kind() == TaskKind::kStructFor) {
        absl::StrAppend(&text, " snode", task.snode_id());
      }
      if (task.num_operands() == 2) {
        absl::StrAppend(&text, " [", op(0), ", ", op(1), ")");
      }
      return text;
    }
    case StmtKind::kAdStackAlloca: {
      const auto& stack = static_cast<const AdStackAllocaStmt&>(s);
      std::string text = absl::StrCat(name, " max_size=", stack.max_size());
      if (stack.size_expr()) {
        absl::StrAppend(&text, " size_expr=", stack.size_expr()->ToString());
      }
      if (stack.checkpoint_group() >= 0) {
        absl::StrAppend(&text, " checkpoint_group=", stack.checkpoint_group(),
                        stack.role() == AdStackRole::kCheckpoint
                            ? " checkpoints"
                            : " segment");
      }
      return text;
    }
    case StmtKind::kAdStackRow:
      return absl::StrCat(name, " ", op(0), " gate=",
                          static_cast<const AdStackRowStmt&>(s).gate().ToString());
    case StmtKind::kSharedArray:
      return absl::StrCat(
          name, " ", static_cast<const SharedArrayStmt&>(s).num_elements());
    case StmtKind::kSimtOp: {
      const auto& simt = static_cast<const SimtOpStmt&>(s);
      return absl::StrCat(OpName(simt.op()),
                          s.num_operands() == 0 ? "" : " ", list(0));
    }
    case StmtKind::kFuncArg:
      return absl::StrCat(name, " ",
                          static_cast<const FuncArgStmt&>(s).index());
    case StmtKind::kFuncCall: {
      const auto& c = static_cast<const FuncCallStmt&>(s);
      return absl::StrCat(name, " fn", c.function(), " ", c.name(), "(",
                          list(0), ")");
    }
    default:
      return s.num_operands() == 0 ? name : absl::StrCat(name, " ", list(0));
  }
}

void PrintBlock(const Block& block, const StmtNumbering& numbering,
                const PrintOptions& options, int depth, std::string* out);

void PrintContainerBlocks(const Stmt& s, const StmtNumbering& numbering,
                          const PrintOptions& options, int depth,
                          std::string* out) {
  const std::string pad(2 * depth, ' ');
  if (const auto* branch = DynCast<IfStmt>(&s)) {
    absl::StrAppend(out, " {\n");
    PrintBlock(*branch->true_block(), numbering, options, depth + 1, out);
    absl::StrAppend(out, pad, "} else {\n");
    PrintBlock(*branch->false_block(), numbering, options, depth + 1, out);
    absl::StrAppend(out, pad, "}\n");
    return;
  }
  if (const auto* task = DynCast<OffloadedTaskStmt>(&s)) {
    const std::string inner(2 * (depth + 1), ' ');
    absl::StrAppend(out, " {\n", inner, "prologue {\n");
    PrintBlock(*task->prologue(), numbering, options, depth + 2, out);
    absl::StrAppend(out, inner, "}\n", inner, "body {\n");
    PrintBlock(*task->body(), numbering, options, depth + 2, out);
    absl::StrAppend(out, inner, "}\n", pad, "}\n");
    return;
  }
  absl::StrAppend(out, " {\n");
  PrintBlock(*s.blocks()[0], numbering, options, depth + 1, out);
  absl::StrAppend(out, pad, "}\n");
}

void PrintBlock(const Block& block, const StmtNumbering& numbering,
                const PrintOptions& options, int depth, std::string* out) {
  const std::string pad(2 * depth, ' ');
  for (const auto& stmt : block) {
    absl::StrAppend(out, pad, PrintStmt(*stmt, numbering));
    if (options.locations)
      absl::StrAppend(out, "  @", stmt->loc().ToString());
    if (stmt->graph_section() >= 0) {
      absl::StrAppend(out, "  #section ", stmt->graph_region(), ".",
                      stmt->graph_section());
    }
    if (stmt->block_dim() > 0)
      absl::StrAppend(out, "  #block_dim ", stmt->block_dim());
    if (!stmt->loop_name().empty())
      absl::StrAppend(out, "  loop_name=", stmt->loop_name());
    if (stmt->blocks().empty()) {
      absl::StrAppend(out, "\n");
    } else {
      PrintContainerBlocks(*stmt, numbering, options, depth, out);
    }
  }
}

}  // namespace

StmtNumbering::StmtNumbering(const Kernel& kernel) {
  int next = 0;
  WalkKernel(kernel, [&](const Stmt* stmt) { numbers_[stmt] = next++; });
}

std::string StmtNumbering::Name(const Stmt* stmt) const {
  auto it = numbers_.find(stmt);
  return it == numbers_.end() ? "$?" : absl::StrCat("$", it->second);
}

std::string PrintStmt(const Stmt& stmt, const StmtNumbering& numbering) {
  std::string head = numbering.Name(&stmt);
  if (!stmt.type().is_void())
    absl::StrAppend(&head, " : ", stmt.type().ToString());
  return absl::StrCat(head, " = ", Body(stmt, numbering));
}

std::string PrintKernel(const Kernel& kernel, const PrintOptions& options) {
  StmtNumbering numbering(kernel);
  std::vector<std::string> params;
  for (size_t i = 0; i < kernel.params().size(); ++i) {
    params.push_back(ParamText(kernel.params()[i], static_cast<int>(i)));
  }
  std::string out = absl::StrCat("kernel ", kernel.name(), "(",
                                 absl::StrJoin(params, ", "), ")");
  if (options.locations)
    absl::StrAppend(&out, "  @", kernel.loc().ToString());
  if (!kernel.no_activate().empty()) {
    absl::StrAppend(&out, " no_activate(snode",
                    absl::StrJoin(kernel.no_activate(), ", snode"), ")");
  }
  absl::StrAppend(&out, " {\n");
  PrintBlock(*kernel.body(), numbering, options, 1, &out);
  absl::StrAppend(&out, "}\n");
  for (size_t f = 0; f < kernel.functions().size(); ++f) {
    const Function& fn = *kernel.functions()[f];
    std::vector<std::string> fn_params;
    for (const FunctionParam& p : fn.params())
      fn_params.push_back(absl::StrCat(p.name, ": ", p.type.ToString()));
    absl::StrAppend(&out, "function fn", f, " ", fn.name(), "(",
                    absl::StrJoin(fn_params, ", "), ")");
    if (options.locations)
      absl::StrAppend(&out, "  @", fn.loc().ToString());
    absl::StrAppend(&out, " {\n");
    PrintBlock(*fn.body(), StmtNumbering(fn.scope()), options, 1, &out);
    absl::StrAppend(&out, "}\n");
  }
  return out;
}

}  // namespace quadrants::ir
