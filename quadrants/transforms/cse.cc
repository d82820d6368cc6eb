#include "quadrants/transforms/cse.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "quadrants/ir/statements.h"

namespace quadrants::transforms {
namespace {

using ir::Stmt;
using ir::StmtKind;

// Equal keys mean interchangeable statements: same kind, type, attributes
// and operand identities.
std::string KeyOf(const Stmt& s) {
  std::string key =
      absl::StrCat(static_cast<int>(s.kind()), "|", s.type().ToString(), "|");
  switch (s.kind()) {
    case StmtKind::kConst:
      absl::StrAppend(&key,
                      static_cast<const ir::ConstStmt&>(s).value().ToString());
      break;
    case StmtKind::kArgLoad:
      absl::StrAppend(&key, static_cast<const ir::ArgLoadStmt&>(s).arg());
      break;
    case StmtKind::kNdarrayPtr:
      absl::StrAppend(&key, static_cast<const ir::NdarrayPtrStmt&>(s).arg());
      break;
    case StmtKind::kNdarrayShape: {
      const auto& shape = static_cast<const ir::NdarrayShapeStmt&>(s);
      absl::StrAppend(&key, shape.arg(), ",", shape.axis());
      break;
    }
    case StmtKind::kFieldPtr: {
      const auto& f = static_cast<const ir::FieldPtrStmt&>(s);
      absl::StrAppend(&key, f.snode_id(), f.block() != nullptr ? "b" : "");
      break;
    }
    case StmtKind::kUnaryOp:
      absl::StrAppend(
          &key, static_cast<int>(static_cast<const ir::UnaryOpStmt&>(s).op()));
      break;
    case StmtKind::kBinaryOp:
      absl::StrAppend(
          &key, static_cast<int>(static_cast<const ir::BinaryOpStmt&>(s).op()));
      break;
    case StmtKind::kLoopIndex:
      absl::StrAppend(&key, static_cast<const ir::LoopIndexStmt&>(s).axis());
      break;
    case StmtKind::kFuncArg:
      absl::StrAppend(&key, static_cast<const ir::FuncArgStmt&>(s).index());
      break;
    default:
      break;
  }
  for (const Stmt* operand : s.operands()) {
    absl::StrAppend(&key, "|", reinterpret_cast<uintptr_t>(operand));
  }
  return key;
}

class Cse {
 public:
  bool Run(ir::Kernel& kernel) {
    Visit(*kernel.body());
    return changed_;
  }

 private:
  Stmt* Lookup(const std::string& key) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(key);
      if (found != it->end())
        return found->second;
    }
    return nullptr;
  }

  Stmt* Resolve(Stmt* s) const {
    auto it = replaced_.find(s);
    return it == replaced_.end() ? s : it->second;
  }

  void Visit(ir::Block& block) {
    scopes_.emplace_back();
    for (size_t i = 0; i < block.size(); ++i) {
      Stmt* s = block.at(i);
      for (size_t k = 0; k < s->num_operands(); ++k) {
        s->set_operand(k, Resolve(s->operand(k)));
      }
      // Each child block is its own scope: siblings (then/else, a task's
      // prologue and body) never see each other's values.
      for (ir::Block* child : s->blocks())
        Visit(*child);
      for (size_t k = 0; k < s->num_operands(); ++k) {
        s->set_operand(k, Resolve(s->operand(k)));
      }
      if (!s->is_pure() || s->type().is_unknown())
        continue;
      std::string key = KeyOf(*s);
      if (Stmt* earlier = Lookup(key)) {
        replaced_[s] = earlier;
        dead_.push_back(block.Extract(s));
        --i;
        changed_ = true;
      } else {
        scopes_.back().emplace(std::move(key), s);
      }
    }
    scopes_.pop_back();
  }

  std::vector<absl::flat_hash_map<std::string, Stmt*>> scopes_;
  absl::flat_hash_map<Stmt*, Stmt*> replaced_;
  std::vector<std::unique_ptr<Stmt>> dead_;
  bool changed_ = false;
};

}  // namespace

bool EliminateCommonSubexpressions(ir::Kernel& kernel) {
  return Cse().Run(kernel);
}

}  // namespace quadrants::transforms
