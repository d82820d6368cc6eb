#include "quadrants/ir/cloner.h"

#include <vector>

#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::ir {
namespace {

// A copy of `s` with the same attributes and the *original* operands; the
// caller remaps operands once every statement has its copy.
std::unique_ptr<Stmt> CopyAttributes(const Stmt& s) {
  const std::vector<Stmt*>& ops = s.operands();
  std::unique_ptr<Stmt> copy;
  switch (s.kind()) {
    case StmtKind::kConst:
      copy =
          std::make_unique<ConstStmt>(static_cast<const ConstStmt&>(s).value());
      break;
    case StmtKind::kArgLoad:
      copy = std::make_unique<ArgLoadStmt>(
          static_cast<const ArgLoadStmt&>(s).arg(), s.type().element());
      break;
    case StmtKind::kNdarrayPtr: {
      const auto& x = static_cast<const NdarrayPtrStmt&>(s);
      auto ptr =
          std::make_unique<NdarrayPtrStmt>(x.arg(), s.type().element(), ops);
      ptr->set_label(x.label());
      copy = std::move(ptr);
      break;
    }
    case StmtKind::kNdarrayShape: {
      const auto& x = static_cast<const NdarrayShapeStmt&>(s);
      copy = std::make_unique<NdarrayShapeStmt>(x.arg(), x.axis());
      break;
    }
    case StmtKind::kFieldPtr: {
      const auto& x = static_cast<const FieldPtrStmt&>(s);
      std::vector<Stmt*> indices(ops.begin(), ops.begin() + x.num_indices());
      auto ptr = std::make_unique<FieldPtrStmt>(
          x.snode_id(), s.type().element(), std::move(indices),
          x.block() != nullptr ? ops.back() : nullptr);
      ptr->set_label(x.label());
      copy = std::move(ptr);
      break;
    }
    case StmtKind::kSNodeOp: {
      const auto& x = static_cast<const SNodeOpStmt&>(s);
      auto op = std::make_unique<SNodeOpStmt>(x.op(), x.snode_id(), ops[0]);
      op->set_label(x.label());
      copy = std::move(op);
      break;
    }
    case StmtKind::kGlobalLoad:
      copy = std::make_unique<GlobalLoadStmt>(
          ops[0], static_cast<const GlobalLoadStmt&>(s).is_volatile());
      break;
    case StmtKind::kGlobalStore:
      copy = std::make_unique<GlobalStoreStmt>(ops[0], ops[1]);
      break;
    case StmtKind::kAlloca:
      copy = std::make_unique<AllocaStmt>(s.type().element());
      break;
    case StmtKind::kLocalLoad:
      copy = std::make_unique<LocalLoadStmt>(ops[0]);
      break;
    case StmtKind::kLocalStore:
      copy = std::make_unique<LocalStoreStmt>(ops[0], ops[1]);
      break;
    case StmtKind::kUnaryOp:
      copy = std::make_unique<UnaryOpStmt>(
          static_cast<const UnaryOpStmt&>(s).op(), ops[0], s.type().element());
      break;
    case StmtKind::kBinaryOp:
      copy = std::make_unique<BinaryOpStmt>(
          static_cast<const BinaryOpStmt&>(s).op(), ops[0], ops[1]);
      break;
    case StmtKind::kTernaryOp:
      copy = std::make_unique<TernaryOpStmt>(ops[0], ops[1], ops[2]);
      break;
    case StmtKind::kAtomicOp:
      copy = std::make_unique<AtomicOpStmt>(
          static_cast<const AtomicOpStmt&>(s).op(), ops[0], ops[1],
          ops.size() > 2 ? ops[2] : nullptr);
      break;
    case StmtKind::kRangeFor:
      copy = std::make_unique<RangeForStmt>(ops[0], ops[1]);
      break;
    case StmtKind::kStructFor:
      copy = std::make_unique<StructForStmt>(
          static_cast<const StructForStmt&>(s).snode_id());
      break;
    case StmtKind::kLoopIndex:
      copy = std::make_unique<LoopIndexStmt>(
          ops[0], static_cast<const LoopIndexStmt&>(s).axis());
      break;
    case StmtKind::kWhile:
      copy = std::make_unique<WhileStmt>();
      break;
    case StmtKind::kBreak:
      copy = std::make_unique<BreakStmt>();
      break;
    case StmtKind::kContinue:
      copy = std::make_unique<ContinueStmt>();
      break;
    case StmtKind::kIf:
      copy = std::make_unique<IfStmt>(ops[0]);
      break;
    case StmtKind::kAssert:
      copy = std::make_unique<AssertStmt>(
          ops[0], static_cast<const AssertStmt&>(s).message(),
          std::vector<Stmt*>(ops.begin() + 1, ops.end()));
      break;
    case StmtKind::kOffloadedTask: {
      const auto& t = static_cast<const OffloadedTaskStmt&>(s);
      auto task =
          std::make_unique<OffloadedTaskStmt>(t.task_kind(), t.snode_id());
      if (t.num_operands() == 2)
        task->SetBounds(ops[0], ops[1]);
      copy = std::move(task);
      break;
    }
    case StmtKind::kAdStackAlloca: {
      const auto& a = static_cast<const AdStackAllocaStmt&>(s);
      auto stack = std::make_unique<AdStackAllocaStmt>(a.dtype(), a.max_size());
      stack->set_size_expr(a.size_expr());  // immutable, safe to share
      stack->set_checkpoint(a.checkpoint_group(), a.role());
      copy = std::move(stack);
      break;
    }
    case StmtKind::kAdStackPush:
      copy = std::make_unique<AdStackPushStmt>(ops[0], ops[1]);
      break;
    case StmtKind::kAdStackPop:
      copy = std::make_unique<AdStackPopStmt>(ops[0]);
      break;
    case StmtKind::kAdStackLoadTop:
      copy = std::make_unique<AdStackLoadTopStmt>(ops[0]);
      break;
    case StmtKind::kAdStackLoadTopAdj:
      copy = std::make_unique<AdStackLoadTopAdjStmt>(ops[0]);
      break;
    case StmtKind::kAdStackCapacity:
      copy = std::make_unique<AdStackCapacityStmt>(ops[0]);
      break;
    case StmtKind::kAdStackRow:
      copy = std::make_unique<AdStackRowStmt>(
          ops[0], static_cast<const AdStackRowStmt&>(s).gate());
      break;
    case StmtKind::kAdStackAccAdjoint:
      copy = std::make_unique<AdStackAccAdjointStmt>(ops[0], ops[1]);
      break;
    case StmtKind::kDebugPrint: {
      const auto& p = static_cast<const DebugPrintStmt&>(s);
      copy = std::make_unique<DebugPrintStmt>(p.pieces(), p.specs(), ops);
      break;
    }
    case StmtKind::kRandom:
      copy = std::make_unique<RandomStmt>(s.type().element());
      break;
    case StmtKind::kSharedArray: {
      const auto& a = static_cast<const SharedArrayStmt&>(s);
      copy = std::make_unique<SharedArrayStmt>(a.type().element(),
                                               a.num_elements());
      break;
    }
    case StmtKind::kSharedPtr:
      copy = std::make_unique<SharedPtrStmt>(ops[0], ops[1]);
      break;
    case StmtKind::kSimtOp:
      copy = std::make_unique<SimtOpStmt>(
          static_cast<const SimtOpStmt&>(s).op(), s.type(), ops);
      break;
    case StmtKind::kThreadIndex:
      copy = std::make_unique<ThreadIndexStmt>();
      break;
    case StmtKind::kFuncArg:
      copy = std::make_unique<FuncArgStmt>(
          static_cast<const FuncArgStmt&>(s).index(), s.type());
      break;
    case StmtKind::kFuncCall: {
      const auto& c = static_cast<const FuncCallStmt&>(s);
      copy = std::make_unique<FuncCallStmt>(c.function(), c.name(), c.params(),
                                            ops);
      break;
    }
    case StmtKind::kReturn:
      copy = std::make_unique<ReturnStmt>();
      break;
  }
  copy->set_type(s.type());
  copy->set_loc(s.loc());
  copy->set_graph_section(s.graph_region(), s.graph_section());
  copy->set_block_dim(s.block_dim());
  copy->set_loop_name(s.loop_name());
  return copy;
}

std::unique_ptr<Stmt> CopyTree(const Stmt& s,
                               absl::flat_hash_map<const Stmt*, Stmt*>& map,
                               std::vector<Stmt*>& copies) {
  std::unique_ptr<Stmt> copy = CopyAttributes(s);
  map[&s] = copy.get();
  copies.push_back(copy.get());
  std::vector<Block*> from = s.blocks();
  std::vector<Block*> to = copy->blocks();
  for (size_t b = 0; b < from.size(); ++b) {
    for (const auto& child : *from[b]) {
      to[b]->Append(CopyTree(*child, map, copies));
    }
  }
  return copy;
}

void RemapOperands(const std::vector<Stmt*>& copies,
                   const absl::flat_hash_map<const Stmt*, Stmt*>& map) {
  for (Stmt* copy : copies) {
    for (size_t i = 0; i < copy->num_operands(); ++i) {
      auto it = map.find(copy->operand(i));
      if (it != map.end())
        copy->set_operand(i, it->second);
    }
  }
}

}  // namespace

std::unique_ptr<Stmt> CloneStmt(
    const Stmt& stmt, absl::flat_hash_map<const Stmt*, Stmt*>* remap) {
  absl::flat_hash_map<const Stmt*, Stmt*> local;
  absl::flat_hash_map<const Stmt*, Stmt*>& map = remap ? *remap : local;
  std::vector<Stmt*> copies;
  std::unique_ptr<Stmt> copy = CopyTree(stmt, map, copies);
  RemapOperands(copies, map);
  return copy;
}

std::unique_ptr<Kernel> CloneKernel(const Kernel& kernel) {
  auto copy = std::make_unique<Kernel>(kernel.name(), kernel.loc());
  for (const KernelParam& p : kernel.params())
    copy->AddParam(p);
  for (int snode : kernel.no_activate())
    copy->AddNoActivate(snode);
  absl::flat_hash_map<const Stmt*, Stmt*> map;
  std::vector<Stmt*> copies;
  for (const auto& stmt : *kernel.body()) {
    copy->body()->Append(CopyTree(*stmt, map, copies));
  }
  RemapOperands(copies, map);
  for (const auto& function : kernel.functions()) {
    auto fn = std::make_unique<Function>(*copy, function->name(),
                                         function->loc(), function->params());
    absl::flat_hash_map<const Stmt*, Stmt*> fn_map;
    std::vector<Stmt*> fn_copies;
    for (const auto& stmt : *function->body())
      fn->body()->Append(CopyTree(*stmt, fn_map, fn_copies));
    RemapOperands(fn_copies, fn_map);
    copy->AddFunction(std::move(fn));
  }
  return copy;
}

}  // namespace quadrants::ir
