#ifndef QUADRANTS_IR_BUILDER_H_
#define QUADRANTS_IR_BUILDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "quadrants/common/source_location.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/ir/statements.h"

namespace quadrants::ir {

// Creates statements at an insertion point, stamping each with the current
// source location. Front ends (the Python AST transformer, C++ tests) build
// kernels through this class only.
//
//   IRBuilder b(&kernel, &snodes);
//   auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
//   {
//     auto scope = b.EnterBlock(loop->body());
//     Stmt* i = b.LoopIndex(loop);
//     ...
//   }
class IRBuilder {
 public:
  explicit IRBuilder(Kernel* kernel, const SNodeTree* snodes = nullptr);

  Kernel* kernel() const { return kernel_; }

  // Subsequent statements get `loc`.
  void SetLocation(SourceLocation loc) { loc_ = std::move(loc); }
  // Tags the statements made from now on with a qd.graph.parallel()
  // section (see Stmt::graph_section); -1, -1 ends it.
  void SetGraphSection(int region, int section) {
    graph_region_ = region;
    graph_section_ = section;
  }
  const SourceLocation& location() const { return loc_; }

  // Inserts before position `index` of `block` (default: at its end).
  void SetInsertPoint(Block* block, size_t index);
  void SetInsertPointToEnd(Block* block) {
    SetInsertPoint(block, block->size());
  }

  // Restores the previous insertion point when it goes out of scope.
  // Scopes nest; the builder keeps the saved points so that InsertAt can
  // keep them right when it inserts before one of them.
  class Scope {
   public:
    explicit Scope(IRBuilder* builder) : builder_(builder) {}
    Scope(Scope&& other) noexcept
        : builder_(std::exchange(other.builder_, nullptr)) {}
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    IRBuilder* builder_;
  };
  [[nodiscard]] Scope EnterBlock(Block* block);

  // Takes ownership of `stmt`, inserts it and advances the insertion point.
  template <typename T>
  T* Insert(std::unique_ptr<T> stmt) {
    stmt->set_loc(loc_);
    stmt->set_graph_section(graph_region_, graph_section_);
    T* raw = stmt.get();
    block_->Insert(index_++, std::move(stmt));
    return raw;
  }
  // Inserts at `position` of `block` without moving the insertion point
  // (it, and the points saved by enclosing scopes, shift along when they
  // lie after `position` in the same block).
  template <typename T>
  T* InsertAt(Block* block, size_t position, std::unique_ptr<T> stmt) {
    stmt->set_loc(loc_);
    stmt->set_graph_section(graph_region_, graph_section_);
    T* raw = stmt.get();
    block->Insert(position, std::move(stmt));
    ShiftInsertPoints(block, position);
    return raw;
  }
  template <typename T, typename... Args>
  T* Make(Args&&... args) {
    return Insert(std::make_unique<T>(std::forward<Args>(args)...));
  }

  // Values.
  ConstStmt* Const(Constant value) { return Make<ConstStmt>(value); }
  ConstStmt* ConstI32(int32_t value);
  ConstStmt* ConstI64(int64_t value);
  ConstStmt* ConstF32(float value);
  ConstStmt* ConstF64(double value);
  ConstStmt* ConstBool(bool value);
  ArgLoadStmt* ArgLoad(int arg);

  // Global memory.
  NdarrayPtrStmt* NdarrayPtr(int arg, std::vector<Stmt*> indices);
  NdarrayShapeStmt* NdarrayShape(int arg, int axis);
  // The field's dtype comes from the SNode tree given to the constructor.
  FieldPtrStmt* FieldPtr(int snode_id, std::vector<Stmt*> indices);
  FieldPtrStmt* FieldPtr(int snode_id, PrimitiveType dtype,
                         std::vector<Stmt*> indices);
  GlobalLoadStmt* GlobalLoad(Stmt* ptr, bool is_volatile = false) {
    return Make<GlobalLoadStmt>(ptr, is_volatile);
  }
  GlobalStoreStmt* GlobalStore(Stmt* ptr, Stmt* value) {
    return Make<GlobalStoreStmt>(ptr, value);
  }

  // Locals.
  AllocaStmt* Alloca(PrimitiveType dtype) { return Make<AllocaStmt>(dtype); }
  LocalLoadStmt* LocalLoad(Stmt* alloca) { return Make<LocalLoadStmt>(alloca); }
  LocalStoreStmt* LocalStore(Stmt* alloca, Stmt* value) {
    return Make<LocalStoreStmt>(alloca, value);
  }

  // Arithmetic.
  UnaryOpStmt* Unary(UnaryOpKind op, Stmt* x) {
    return Make<UnaryOpStmt>(op, x);
  }
  UnaryOpStmt* Cast(Stmt* x, PrimitiveType to) {
    return Make<UnaryOpStmt>(UnaryOpKind::kCast, x, to);
  }
  BinaryOpStmt* Binary(BinaryOpKind op, Stmt* a, Stmt* b) {
    return Make<BinaryOpStmt>(op, a, b);
  }
  BinaryOpStmt* Add(Stmt* a, Stmt* b) {
    return Binary(BinaryOpKind::kAdd, a, b);
  }
  BinaryOpStmt* Sub(Stmt* a, Stmt* b) {
    return Binary(BinaryOpKind::kSub, a, b);
  }
  BinaryOpStmt* Mul(Stmt* a, Stmt* b) {
    return Binary(BinaryOpKind::kMul, a, b);
  }
  BinaryOpStmt* Div(Stmt* a, Stmt* b) {
    return Binary(BinaryOpKind::kDiv, a, b);
  }
  BinaryOpStmt* Lt(Stmt* a, Stmt* b) { return Binary(BinaryOpKind::kLt, a, b); }
  TernaryOpStmt* Select(Stmt* cond, Stmt* a, Stmt* b) {
    return Make<TernaryOpStmt>(cond, a, b);
  }
  AtomicOpStmt* Atomic(AtomicOpKind op, Stmt* ptr, Stmt* value,
                       Stmt* expected = nullptr) {
    return Make<AtomicOpStmt>(op, ptr, value, expected);
  }
  UnaryOpStmt* BitCast(Stmt* x, PrimitiveType to) {
    return Make<UnaryOpStmt>(UnaryOpKind::kBitCast, x, to);
  }

  // Control flow: each returns the container; enter its blocks to fill them.
  RangeForStmt* RangeFor(Stmt* begin, Stmt* end) {
    return Make<RangeForStmt>(begin, end);
  }
  StructForStmt* StructFor(int snode_id) {
    return Make<StructForStmt>(snode_id);
  }
  LoopIndexStmt* LoopIndex(Stmt* loop, int axis = 0) {
    return Make<LoopIndexStmt>(loop, axis);
  }
  WhileStmt* While() { return Make<WhileStmt>(); }
  BreakStmt* Break() { return Make<BreakStmt>(); }
  ContinueStmt* Continue() { return Make<ContinueStmt>(); }
  IfStmt* If(Stmt* cond) { return Make<IfStmt>(cond); }
  AssertStmt* Assert(Stmt* cond, std::string message,
                     std::vector<Stmt*> args = {}) {
    return Make<AssertStmt>(cond, std::move(message), std::move(args));
  }
  DebugPrintStmt* Print(std::vector<std::string> pieces,
                        std::vector<std::string> specs,
                        std::vector<Stmt*> values) {
    return Make<DebugPrintStmt>(std::move(pieces), std::move(specs),
                                std::move(values));
  }
  RandomStmt* Random(PrimitiveType dtype) { return Make<RandomStmt>(dtype); }
  ThreadIndexStmt* ThreadIndex() { return Make<ThreadIndexStmt>(); }
  SharedArrayStmt* SharedArray(PrimitiveType dtype, int64_t num_elements) {
    return Make<SharedArrayStmt>(dtype, num_elements);
  }
  SharedPtrStmt* SharedPtr(Stmt* array, Stmt* index) {
    return Make<SharedPtrStmt>(array, index);
  }
  SimtOpStmt* SimtOp(SimtOpKind op, DataType type,
                     std::vector<Stmt*> operands = {}) {
    return Make<SimtOpStmt>(op, type, std::move(operands));
  }
  OffloadedTaskStmt* Task(TaskKind kind, int snode_id = -1) {
    return Make<OffloadedTaskStmt>(kind, snode_id);
  }

  // Adstack.
  AdStackAllocaStmt* AdStackAlloca(PrimitiveType dtype, int64_t max_size) {
    return Make<AdStackAllocaStmt>(dtype, max_size);
  }
  AdStackPushStmt* AdStackPush(Stmt* stack, Stmt* value) {
    return Make<AdStackPushStmt>(stack, value);
  }
  AdStackPopStmt* AdStackPop(Stmt* stack) {
    return Make<AdStackPopStmt>(stack);
  }
  AdStackCapacityStmt* AdStackCapacity(Stmt* stack) {
    return Make<AdStackCapacityStmt>(stack);
  }
  AdStackRowStmt* AdStackRow(Stmt* passes, AdStackGate gate) {
    return Make<AdStackRowStmt>(passes, std::move(gate));
  }
  AdStackLoadTopStmt* AdStackLoadTop(Stmt* stack) {
    return Make<AdStackLoadTopStmt>(stack);
  }
  AdStackLoadTopAdjStmt* AdStackLoadTopAdj(Stmt* stack) {
    return Make<AdStackLoadTopAdjStmt>(stack);
  }
  AdStackAccAdjointStmt* AdStackAccAdjoint(Stmt* stack, Stmt* value) {
    return Make<AdStackAccAdjointStmt>(stack, value);
  }

 private:
  void ShiftInsertPoints(Block* block, size_t position);

  Kernel* kernel_;
  const SNodeTree* snodes_;
  Block* block_;
  size_t index_;
  std::vector<std::pair<Block*, size_t>> saved_;  // one per live Scope
  SourceLocation loc_;
  int graph_region_ = -1;
  int graph_section_ = -1;
};

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_BUILDER_H_
