#ifndef QUADRANTS_IR_STMT_H_
#define QUADRANTS_IR_STMT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "quadrants/common/source_location.h"
#include "quadrants/ir/types.h"

namespace quadrants::ir {

// Every statement kind, once. Each X(Name) has a class NameStmt in
// statements.h and an enumerator StmtKind::kName.
#define QD_FOR_EACH_STMT_KIND(X) \
  X(Const)                       \
  X(ArgLoad)                     \
  X(NdarrayPtr)                  \
  X(NdarrayShape)                \
  X(FieldPtr)                    \
  X(SNodeOp)                     \
  X(GlobalLoad)                  \
  X(GlobalStore)                 \
  X(Alloca)                      \
  X(LocalLoad)                   \
  X(LocalStore)                  \
  X(UnaryOp)                     \
  X(BinaryOp)                    \
  X(TernaryOp)                   \
  X(AtomicOp)                    \
  X(RangeFor)                    \
  X(StructFor)                   \
  X(LoopIndex)                   \
  X(While)                       \
  X(Break)                       \
  X(Continue)                    \
  X(If)                          \
  X(Assert)                      \
  X(OffloadedTask)               \
  X(AdStackAlloca)               \
  X(AdStackPush)                 \
  X(AdStackPop)                  \
  X(AdStackLoadTop)              \
  X(AdStackLoadTopAdj)           \
  X(AdStackAccAdjoint)           \
  X(AdStackCapacity)             \
  X(AdStackRow)                  \
  X(DebugPrint)                  \
  X(Random)                      \
  X(ThreadIndex)                 \
  X(SharedArray)                 \
  X(SharedPtr)                   \
  X(SimtOp)                      \
  X(FuncArg)                     \
  X(FuncCall)                    \
  X(Return)

enum class StmtKind {
#define QD_DECLARE_KIND(name) k##name,
  QD_FOR_EACH_STMT_KIND(QD_DECLARE_KIND)
#undef QD_DECLARE_KIND
};

// The mnemonic the printer uses, e.g. "range_for".
absl::string_view StmtKindName(StmtKind kind);

class Block;

// A statement: a kind, a result type, explicit operands (use-def edges to the
// statements whose values it reads) and the Python source line it came from.
// Container statements (loops, if, tasks) own child blocks.
class Stmt {
 public:
  virtual ~Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  StmtKind kind() const { return kind_; }
  DataType type() const { return type_; }
  void set_type(DataType type) { type_ = type; }
  const SourceLocation& loc() const { return loc_; }
  void set_loc(SourceLocation loc) { loc_ = std::move(loc); }
  // The qd.graph.parallel() section (`graph_section()` of the kernel's
  // parallel_context region `graph_region()`) the statement was compiled
  // in; -1 outside sections. Tasks of different sections of one region
  // may run at once.
  int graph_region() const { return graph_region_; }
  int graph_section() const { return graph_section_; }
  // Threads per GPU block a parallel loop (and the task made of it) asks
  // for with qd.loop_config(block_dim=...); 0 leaves it to the backend.
  int block_dim() const { return block_dim_; }
  void set_block_dim(int block_dim) { block_dim_ = block_dim; }
  // The name qd.loop_config(name=...) gives a top-level loop (and the task
  // made of it): its GPU function is named after it, for profilers. Empty
  // when unnamed.
  const std::string& loop_name() const { return loop_name_; }
  void set_loop_name(std::string name) { loop_name_ = std::move(name); }
  void set_graph_section(int region, int section) {
    graph_region_ = region;
    graph_section_ = section;
  }

  // The block that holds this statement; null until inserted.
  Block* parent() const { return parent_; }
  // The container statement around this one (null at the kernel root).
  Stmt* enclosing() const;

  const std::vector<Stmt*>& operands() const { return operands_; }
  size_t num_operands() const { return operands_.size(); }
  Stmt* operand(size_t i) const { return operands_[i]; }
  void set_operand(size_t i, Stmt* value) { operands_[i] = value; }
  // Replaces every operand equal to `from` with `to`.
  void ReplaceOperand(Stmt* from, Stmt* to);

  // Child blocks in execution order; empty for non-containers.
  virtual std::vector<Block*> blocks() const { return {}; }

  // Pure statements compute their value from their operands and attributes
  // alone: two with equal inputs are interchangeable (CSE) and an unused one
  // can be deleted (DCE).
  virtual bool is_pure() const { return false; }
  // Statements with effects beyond their value (stores, control flow,
  // stack pushes) are never deleted, even when unused.
  virtual bool has_side_effects() const { return false; }

  // True when `this` lies (transitively) inside `container`'s blocks.
  bool IsInside(const Stmt* container) const;

 protected:
  Stmt(StmtKind kind, DataType type, std::vector<Stmt*> operands = {})
      : kind_(kind), type_(type), operands_(std::move(operands)) {}
  void AddOperand(Stmt* value) { operands_.push_back(value); }

 private:
  friend class Block;

  StmtKind kind_;
  DataType type_;
  SourceLocation loc_;
  int graph_region_ = -1;
  int graph_section_ = -1;
  int block_dim_ = 0;
  std::string loop_name_;
  Block* parent_ = nullptr;
  std::vector<Stmt*> operands_;
};

// An ordered list of statements owned by a container statement or by the
// kernel (its root block).
class Block {
 public:
  explicit Block(Stmt* owner = nullptr) : owner_(owner) {}
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  // The container statement that owns this block; null for the kernel root.
  Stmt* owner() const { return owner_; }

  size_t size() const { return statements_.size(); }
  bool empty() const { return statements_.empty(); }
  Stmt* at(size_t i) const { return statements_[i].get(); }
  Stmt* back() const { return statements_.back().get(); }
  // Position of `stmt` in this block; size() if absent.
  size_t IndexOf(const Stmt* stmt) const;

  Stmt* Insert(size_t position, std::unique_ptr<Stmt> stmt);
  Stmt* Append(std::unique_ptr<Stmt> stmt) {
    return Insert(size(), std::move(stmt));
  }
  // Removes `stmt` from the block and hands it back.
  std::unique_ptr<Stmt> Extract(const Stmt* stmt);
  void Erase(const Stmt* stmt) { Extract(stmt); }
  // Moves every statement out of the block, in order.
  std::vector<std::unique_ptr<Stmt>> TakeAll();

  auto begin() const { return statements_.begin(); }
  auto end() const { return statements_.end(); }

 private:
  Stmt* owner_;
  std::vector<std::unique_ptr<Stmt>> statements_;
};

// Checked downcasts on the statement kind, in the style of llvm::isa/dyn_cast.
template <typename T>
bool Isa(const Stmt* stmt) {
  return stmt != nullptr && stmt->kind() == T::kKind;
}
template <typename T>
T* DynCast(Stmt* stmt) {
  return Isa<T>(stmt) ? static_cast<T*>(stmt) : nullptr;
}
template <typename T>
const T* DynCast(const Stmt* stmt) {
  return Isa<T>(stmt) ? static_cast<const T*>(stmt) : nullptr;
}

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_STMT_H_
