#include "quadrants/ir/verifier.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/print_format.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"

namespace quadrants::ir {
namespace {

class Verifier {
 public:
  Verifier(const Kernel& kernel, const VerifyOptions& options,
           const Kernel& root, const Function* function = nullptr)
      : kernel_(kernel),
        options_(options),
        numbering_(kernel),
        root_(root),
        function_(function) {}

  absl::Status Run() {
    scopes_.emplace_back();
    VerifyBlock(*kernel_.body(), nullptr);
    return error_;
  }

 private:
  // Records the first failure only; later checks are skipped.
  void Fail(const Stmt& stmt, const std::string& what) {
    if (!error_.ok())
      return;
    error_ = MakeError(
        ErrorKind::kCompilation,
        absl::StrCat("IR verification failed in kernel '", kernel_.name(),
                     "' at ", stmt.loc().ToString(), ": `",
                     PrintStmt(stmt, numbering_), "`: ", what));
  }

  bool Visible(const Stmt* s) const {
    for (const auto& scope : scopes_) {
      if (scope.contains(s))
        return true;
    }
    return false;
  }

  void VerifyBlock(const Block& block, const Stmt* owner) {
    if (block.owner() != owner) {
      if (!block.empty())
        Fail(*block.at(0), "block has the wrong owner");
      return;
    }
    for (const auto& stmt : block) {
      if (!error_.ok())
        return;
      if (stmt->parent() != &block) {
        Fail(*stmt, "statement's parent link does not match its block");
        return;
      }
      VerifyStmt(*stmt);
      scopes_.back().insert(stmt.get());
    }
  }

  void VerifyChildBlock(const Block& block, const Stmt& owner) {
    scopes_.emplace_back();
    VerifyBlock(block, &owner);
    scopes_.pop_back();
  }

  void VerifyStmt(const Stmt& s) {
    if (Isa<OffloadedTaskStmt>(&s)) {
      VerifyTask(static_cast<const OffloadedTaskStmt&>(s));
      return;
    }
    for (size_t i = 0; i < s.num_operands(); ++i) {
      const Stmt* o = s.operand(i);
      if (o == nullptr)
        return Fail(s, absl::StrCat("operand ", i, " is null"));
      if (Isa<LoopIndexStmt>(&s))
        continue;  // refers to its enclosing loop
      if (!Visible(o)) {
        return Fail(s, absl::StrCat("operand ", i, " (", numbering_.Name(o),
                                    ") is used before it is defined or "
                                    "outside its scope"));
      }
    }
    if (s.parent()->owner() == nullptr && HasTasks() &&
        !Isa<OffloadedTaskStmt>(&s)) {
      return Fail(s, "an offloaded kernel may hold only offloaded tasks");
    }
    VerifyKind(s);
    for (Block* child : s.blocks()) {
      if (error_.ok())
        VerifyChildBlock(*child, s);
    }
  }

  bool HasTasks() const {
    for (const auto& stmt : *kernel_.body()) {
      if (Isa<OffloadedTaskStmt>(stmt.get()))
        return true;
    }
    return false;
  }

  void VerifyTask(const OffloadedTaskStmt& task) {
    if (task.parent()->owner() != nullptr) {
      return Fail(task, "offloaded tasks must be at the kernel's top level");
    }
    const bool range = task.task_kind() == TaskKind::kRangeFor;
    if (range != (task.num_operands() == 2)) {
      return Fail(task, range ? "range_for task needs begin and end bounds"
                              : "only range_for tasks take bounds");
    }
    if (task.task_kind() == TaskKind::kStructFor)
      CheckDenseSNode(task, task.snode_id());
    if (!range && !task.prologue()->empty()) {
      return Fail(task, "only range_for tasks have a prologue");
    }
    scopes_.emplace_back();
    VerifyBlock(*task.prologue(), &task);
    for (size_t i = 0; i < task.num_operands() && error_.ok(); ++i) {
      const Stmt* bound = task.operand(i);
      if (bound == nullptr || bound->parent() != task.prologue()) {
        return Fail(task, "task bounds must be computed in its prologue");
      }
      CheckIntegerScalar(task, bound, "task bound");
    }
    scopes_.pop_back();
    if (error_.ok())
      VerifyChildBlock(*task.body(), task);
  }

  // Before type checking only structure is verified: operand types may
  // still differ where type checking will insert casts.
  void CheckIntegerScalar(const Stmt& s, const Stmt* value, const char* what) {
    if (!options_.require_types)
      return;
    if (!value->type().is_integer_scalar()) {
      Fail(s, absl::StrCat(what, " must be an integer scalar, found ",
                           value->type().ToString()));
    }
  }

  // Operand `value` must have type `expected` (skipped while untyped).
  void CheckType(const Stmt& s, const Stmt* value, DataType expected,
                 const char* what) {
    if (!options_.require_types)
      return;
    if (value->type() != expected) {
      Fail(s, absl::StrCat(what, " has type ", value->type().ToString(),
                           ", expected ", expected.ToString()));
    }
  }

  void CheckTyped(const Stmt& s) {
    if (options_.require_types && s.type().is_unknown()) {
      Fail(s, "result type is unknown (type checking has not run)");
    }
  }

  const KernelParam* Param(const Stmt& s, int arg, KernelParam::Kind kind) {
    const auto& params = kernel_.params();
    if (arg < 0 || arg >= static_cast<int>(params.size())) {
      Fail(s, absl::StrCat("kernel has no parameter ", arg));
      return nullptr;
    }
    if (params[arg].kind != kind) {
      Fail(s, absl::StrCat("parameter ", arg, " ('", params[arg].name,
                           "') has the wrong kind for this statement"));
      return nullptr;
    }
    return &params[arg];
  }

  void CheckIndices(const Stmt& s, size_t expected) {
    CheckIndices(s, expected, s.num_operands());
  }
  void CheckIndices(const Stmt& s, size_t expected, size_t count) {
    if (count != expected) {
      return Fail(s, absl::StrCat("takes ", expected, " indices, got ", count));
    }
    for (size_t i = 0; i < count; ++i) {
      CheckIntegerScalar(s, s.operand(i), "index");
    }
  }

  void CheckDenseSNode(const Stmt& s, int snode_id) {
    if (options_.snodes == nullptr)
      return;
    if (snode_id < 0 || snode_id >= options_.snodes->size() ||
        !IndexesAxes(options_.snodes->node(snode_id).kind)) {
      Fail(s, absl::StrCat("snode", snode_id,
                           " is not a dense or sparse SNode"));
    }
  }

  void CheckGlobalPtr(const Stmt& s, const Stmt* ptr) {
    if (!Isa<NdarrayPtrStmt>(ptr) && !Isa<FieldPtrStmt>(ptr) &&
        !Isa<SharedPtrStmt>(ptr) &&
        !(Isa<FuncArgStmt>(ptr) && ptr->type().is_pointer())) {
      Fail(s,
           "expects a field or ndarray element pointer, or a pointer "
           "parameter of the enclosing function");
    }
  }

  void CheckStack(const Stmt& s, bool needs_float) {
    const Stmt* stack = s.operand(0);
    if (!Isa<AdStackAllocaStmt>(stack)) {
      return Fail(s, "operand 0 must be an adstack_alloca");
    }
    if (needs_float && !IsFloat(stack->type().element())) {
      Fail(s, "adjoint access needs a float adstack");
    }
  }

  // A row sits in a task body's top level, alone, before every adstack of
  // the task (they live in the slice it names).
  void VerifyAdStackRow(const Stmt& s) {
    const Block* body = s.parent();
    const auto* task =
        body == nullptr ? nullptr : DynCast<OffloadedTaskStmt>(body->owner());
    if (task == nullptr || task->body() != body)
      return Fail(s, "must be in the top level of a task body");
    const size_t at = body->IndexOf(&s);
    for (size_t k = 0; k < body->size(); ++k) {
      if (k != at && Isa<AdStackRowStmt>(body->at(k)))
        return Fail(s, "is not the only adstack_row of its task");
      if (k < at && Isa<AdStackAllocaStmt>(body->at(k)))
        return Fail(s, "follows an adstack_alloca of its task");
    }
  }

  void CheckEnclosingLoop(const Stmt& s, bool (*is_loop)(const Stmt*),
                          const char* what) {
    for (const Stmt* c = s.enclosing(); c != nullptr; c = c->enclosing()) {
      if (is_loop(c))
        return;
      if (Isa<OffloadedTaskStmt>(c))
        break;
    }
    Fail(s, absl::StrCat(what, " outside of a loop it can apply to"));
  }

  void VerifyKind(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::kArgLoad: {
        const auto& a = static_cast<const ArgLoadStmt&>(s);
        if (auto* p = Param(s, a.arg(), KernelParam::Kind::kScalar)) {
          CheckType(s, &s, DataType::Scalar(p->dtype), "result");
        }
        return;
      }
      case StmtKind::kNdarrayPtr: {
        const auto& a = static_cast<const NdarrayPtrStmt&>(s);
        if (auto* p = Param(s, a.arg(), KernelParam::Kind::kNdarray)) {
          CheckIndices(s, p->ndim);
          CheckType(s, &s, DataType::Pointer(p->dtype), "result");
        }
        return;
      }
      case StmtKind::kNdarrayShape: {
        const auto& a = static_cast<const NdarrayShapeStmt&>(s);
        if (auto* p = Param(s, a.arg(), KernelParam::Kind::kNdarray)) {
          if (a.axis() < 0 || a.axis() >= p->ndim) {
            Fail(s, absl::StrCat("axis ", a.axis(), " out of range for a ",
                                 p->ndim, "-D ndarray"));
          }
        }
        return;
      }
      case StmtKind::kFieldPtr: {
        const auto& f = static_cast<const FieldPtrStmt&>(s);
        const SNodeTree* tree = options_.snodes;
        if (tree == nullptr) {
          for (size_t i = 0; i < s.num_operands(); ++i) {
            CheckIntegerScalar(s, s.operand(i), "index");
          }
          return;
        }
        if (f.snode_id() < 0 || f.snode_id() >= tree->size() ||
            tree->node(f.snode_id()).kind != SNode::Kind::kPlace) {
          return Fail(s, absl::StrCat("snode", f.snode_id(),
                                      " is not a field (place SNode)"));
        }
        CheckIndices(s, tree->NumAxes(f.snode_id()), f.num_indices());
        CheckType(s, &s, DataType::Pointer(tree->node(f.snode_id()).dtype),
                  "result");
        if (f.block() != nullptr) {
          CheckType(s, f.block(), DataType::Scalar(PrimitiveType::kI32),
                    "block");
        }
        return;
      }
      case StmtKind::kSNodeOp: {
        const auto& o = static_cast<const SNodeOpStmt&>(s);
        const SNodeTree* tree = options_.snodes;
        if (tree != nullptr &&
            (o.snode_id() < 0 || o.snode_id() >= tree->size() ||
             !OwnsPool(tree->node(o.snode_id()).kind))) {
          return Fail(s, absl::StrCat("snode", o.snode_id(),
                                      " is not a pointer or dynamic SNode"));
        }
        if (!Isa<FieldPtrStmt>(o.entry()))
          return Fail(s, "operand 0 must be a table entry's field_ptr");
        return;
      }
      case StmtKind::kGlobalLoad:
        CheckGlobalPtr(s, s.operand(0));
        CheckType(s, &s, DataType::Scalar(s.operand(0)->type().element()),
                  "result");
        return;
      case StmtKind::kGlobalStore:
        CheckGlobalPtr(s, s.operand(0));
        CheckType(s, s.operand(1),
                  DataType::Scalar(s.operand(0)->type().element()), "value");
        return;
      case StmtKind::kAtomicOp:
        return VerifyAtomic(static_cast<const AtomicOpStmt&>(s));
      case StmtKind::kLocalLoad:
      case StmtKind::kLocalStore:
        if (!Isa<AllocaStmt>(s.operand(0))) {
          return Fail(s, "operand 0 must be an alloca");
        }
        if (s.num_operands() == 2) {
          CheckType(s, s.operand(1),
                    DataType::Scalar(s.operand(0)->type().element()), "value");
        }
        return;
      case StmtKind::kUnaryOp: {
        const auto& u = static_cast<const UnaryOpStmt&>(s);
        CheckTyped(s);
        if (u.is_cast() || s.type().is_unknown())
          return;
        return VerifyUnaryTypes(u);
      }
      case StmtKind::kBinaryOp: {
        const auto& b = static_cast<const BinaryOpStmt&>(s);
        CheckTyped(s);
        CheckType(s, b.rhs(), b.lhs()->type(), "right operand");
        if (s.type().is_unknown())
          return;
        if (IsComparison(b.op()) || IsLogical(b.op())) {
          CheckType(s, &s, DataType::Scalar(PrimitiveType::kU1), "result");
        } else {
          CheckType(s, b.lhs(), s.type(), "left operand");
        }
        return;
      }
      case StmtKind::kTernaryOp: {
        const auto& t = static_cast<const TernaryOpStmt&>(s);
        CheckTyped(s);
        CheckIntegerScalar(s, t.cond(), "condition");
        CheckType(s, t.if_false(), t.if_true()->type(), "false value");
        if (!s.type().is_unknown())
          CheckType(s, t.if_true(), s.type(), "true value");
        return;
      }
      case StmtKind::kRangeFor: {
        const auto& r = static_cast<const RangeForStmt&>(s);
        CheckIntegerScalar(s, r.begin(), "loop begin");
        CheckIntegerScalar(s, r.end(), "loop end");
        CheckType(s, r.end(), r.begin()->type(), "loop end");
        return;
      }
      case StmtKind::kStructFor:
        CheckDenseSNode(s, static_cast<const StructForStmt&>(s).snode_id());
        return;
      case StmtKind::kLoopIndex:
        VerifyLoopIndex(static_cast<const LoopIndexStmt&>(s));
        return;
      case StmtKind::kBreak:
        CheckEnclosingLoop(s, IsBreakableLoop, "break");
        return;
      case StmtKind::kContinue:
        CheckEnclosingLoop(
            s,
            [](const Stmt* c) { return IsIndexedLoop(c) || Isa<WhileStmt>(c); },
            "continue");
        return;
      case StmtKind::kIf:
      case StmtKind::kAssert:
        CheckIntegerScalar(s, s.operand(0), "condition");
        return;
      case StmtKind::kAdStackPush:
      case StmtKind::kAdStackAccAdjoint:
        CheckStack(s, s.kind() == StmtKind::kAdStackAccAdjoint);
        if (error_.ok()) {
          CheckType(s, s.operand(1),
                    DataType::Scalar(s.operand(0)->type().element()), "value");
        }
        return;
      case StmtKind::kAdStackPop:
      case StmtKind::kAdStackLoadTop:
      case StmtKind::kAdStackCapacity:
        CheckStack(s, false);
        return;
      case StmtKind::kAdStackLoadTopAdj:
        CheckStack(s, true);
        return;
      case StmtKind::kAdStackRow:
        CheckIntegerScalar(s, s.operand(0), "gate");
        VerifyAdStackRow(s);
        return;
      case StmtKind::kDebugPrint: {
        const auto& p = static_cast<const DebugPrintStmt&>(s);
        PrintSite site{p.pieces(), p.specs(), {}, s.loc()};
        for (size_t k = 0; k < s.num_operands(); ++k) {
          if (!s.operand(k)->type().is_scalar())
            return Fail(s, absl::StrCat("value ", k, " is not a scalar"));
          site.types.push_back(s.operand(k)->type().element());
        }
        if (!IsValidPrintSite(site)) {
          Fail(s,
               "print needs one more piece than values and a valid "
               "format spec per value");
        }
        return;
      }
      case StmtKind::kRandom:
        if (!s.type().is_scalar())
          Fail(s, "random must produce a scalar");
        return;
      case StmtKind::kThreadIndex:
        CheckType(s, &s, DataType::Scalar(PrimitiveType::kI32), "result");
        return;
      case StmtKind::kSharedArray:
        if (static_cast<const SharedArrayStmt&>(s).num_elements() <= 0)
          Fail(s, "a shared array needs at least one element");
        return;
      case StmtKind::kSharedPtr:
        if (!Isa<SharedArrayStmt>(s.operand(0)))
          Fail(s, "operand 0 is not a shared array");
        if (!s.operand(1)->type().is_scalar() ||
            !IsInteger(s.operand(1)->type().element()))
          Fail(s, "the element index is not an integer");
        return;
      case StmtKind::kSimtOp: {
        const auto& simt = static_cast<const SimtOpStmt&>(s);
        if (static_cast<int>(s.num_operands()) != OperandCount(simt.op()))
          Fail(s, absl::StrCat(OpName(simt.op()), " takes ",
                               OperandCount(simt.op()), " operands"));
        return;
      }
      case StmtKind::kAdStackAlloca: {
        const auto& a = static_cast<const AdStackAllocaStmt&>(s);
        if (a.max_size() < 0)
          Fail(s, "adstack capacity must not be negative");
        return;
      }
      case StmtKind::kFuncArg: {
        const auto& a = static_cast<const FuncArgStmt&>(s);
        if (function_ == nullptr)
          return Fail(s, "func_arg outside of a function");
        if (a.index() < 0 ||
            a.index() >= static_cast<int>(function_->params().size())) {
          return Fail(s, absl::StrCat("function '", function_->name(),
                                      "' has no parameter ", a.index()));
        }
        CheckType(s, &s, function_->params()[a.index()].type, "result");
        return;
      }
      case StmtKind::kReturn:
        if (function_ == nullptr)
          Fail(s, "return outside of a function");
        return;
      case StmtKind::kFuncCall:
        return VerifyCall(static_cast<const FuncCallStmt&>(s));
      default:
        return;
    }
  }

  void VerifyAtomic(const AtomicOpStmt& a) {
    CheckGlobalPtr(a, a.ptr());
    const DataType element = DataType::Scalar(a.ptr()->type().element());
    CheckType(a, a.value(), element, "value");
    const bool cas = a.op() == AtomicOpKind::kCas;
    if (cas != (a.num_operands() == 3)) {
      return Fail(a, cas ? "atomic_cas needs an expected value (3 operands)"
                         : "only atomic_cas takes a third operand");
    }
    if (cas)
      CheckType(a, a.expected(), element, "expected value");
  }

  void VerifyUnaryTypes(const UnaryOpStmt& u) {
    if (!options_.require_types)
      return;
    if (!u.input()->type().is_scalar())
      return CheckType(u, u.input(), u.type(), "operand");
    const PrimitiveType in = u.input()->type().element();
    const PrimitiveType out = u.type().element();
    switch (u.op()) {
      case UnaryOpKind::kLogicalNot:
        return CheckType(u, &u, DataType::Scalar(PrimitiveType::kU1), "result");
      case UnaryOpKind::kClz:
      case UnaryOpKind::kPopcnt:
      case UnaryOpKind::kFfs:
        CheckIntegerScalar(u, u.input(), "operand");
        return CheckType(u, &u, DataType::Scalar(PrimitiveType::kI32),
                         "result");
      case UnaryOpKind::kFrexpExponent:
        if (!IsFloat(in))
          return Fail(u, "frexp_exponent needs a float operand");
        return CheckType(u, &u, DataType::Scalar(PrimitiveType::kI32),
                         "result");
      case UnaryOpKind::kBitCast:
        if (BitWidth(in) != BitWidth(out) || IsBool(in)) {
          return Fail(u,
                      absl::StrCat("bit_cast between ", PrimitiveTypeName(in),
                                   " and ", PrimitiveTypeName(out),
                                   ", types of different sizes"));
        }
        return;
      case UnaryOpKind::kRound:
      case UnaryOpKind::kFrexpMantissa:
        if (!IsFloat(in))
          return Fail(u,
                      absl::StrCat(OpName(u.op()), " needs a float operand"));
        return CheckType(u, u.input(), u.type(), "operand");
      default:
        return CheckType(u, u.input(), u.type(), "operand");
    }
  }

  void VerifyCall(const FuncCallStmt& call) {
    const auto& functions = root_.functions();
    if (call.function() < 0 ||
        call.function() >= static_cast<int>(functions.size())) {
      return Fail(call,
                  absl::StrCat("the kernel has no function ", call.function()));
    }
    const Function& callee = *functions[call.function()];
    if (callee.params().size() != call.num_operands() ||
        call.params().size() != call.num_operands()) {
      return Fail(call, absl::StrCat("function '", callee.name(), "' takes ",
                                     callee.params().size(), " arguments, ",
                                     call.num_operands(), " given"));
    }
    for (size_t i = 0; i < call.num_operands(); ++i) {
      const DataType want = callee.params()[i].type;
      if (call.params()[i] != want) {
        return Fail(
            call, absl::StrCat("parameter ", i, " of '", callee.name(), "' is ",
                               want.ToString(), " but the call says ",
                               call.params()[i].ToString()));
      }
      if (want.is_pointer() && !Isa<AllocaStmt>(call.operand(i)) &&
          !(Isa<FuncArgStmt>(call.operand(i)) &&
            call.operand(i)->type().is_pointer())) {
        return Fail(call, absl::StrCat("argument ", i,
                                       " must be the address of a local"));
      }
      const std::string what = absl::StrCat("argument ", i);
      CheckType(call, call.operand(i), want, what.c_str());
    }
  }

  void VerifyLoopIndex(const LoopIndexStmt& index) {
    const Stmt* loop = index.loop();
    if (!IsIndexedLoop(loop)) {
      return Fail(index,
                  "operand must be a range_for, struct_for or "
                  "parallel offloaded task");
    }
    if (!index.IsInside(loop)) {
      return Fail(index, "loop index used outside of its loop");
    }
    const auto* task = DynCast<OffloadedTaskStmt>(loop);
    if (task != nullptr && index.parent() == task->prologue()) {
      return Fail(index, "loop index used in its task's prologue");
    }
    int axes = 1;
    int snode = -1;
    if (const auto* sf = DynCast<StructForStmt>(loop))
      snode = sf->snode_id();
    if (task != nullptr && task->task_kind() == TaskKind::kStructFor) {
      snode = task->snode_id();
    }
    if (snode >= 0 && options_.snodes != nullptr &&
        snode < options_.snodes->size()) {
      const SNode& node = options_.snodes->node(snode);
      axes = 0;
      for (int a : node.axes)
        axes = std::max(axes, a + 1);
      axes = std::max(axes, options_.snodes->NumAxes(snode));
    } else if (snode >= 0) {
      axes = 8;  // unknown without the tree
    }
    if (index.axis() < 0 || index.axis() >= axes) {
      Fail(index,
           absl::StrCat("axis ", index.axis(), " out of range for a loop with ",
                        axes, " axes"));
    }
  }

  const Kernel& kernel_;
  const VerifyOptions& options_;
  StmtNumbering numbering_;
  const Kernel& root_;
  const Function* function_;
  std::vector<absl::flat_hash_set<const Stmt*>> scopes_;
  absl::Status error_;
};

}  // namespace

absl::Status Verify(const Kernel& kernel, const VerifyOptions& options) {
  QD_RETURN_IF_ERROR(Verifier(kernel, options, kernel).Run());
  for (const auto& function : kernel.functions()) {
    QD_RETURN_IF_ERROR(
        Verifier(function->scope(), options, kernel, function.get()).Run());
  }
  return absl::OkStatus();
}

}  // namespace quadrants::ir
