#ifndef QUADRANTS_IR_STATEMENTS_H_
#define QUADRANTS_IR_STATEMENTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quadrants/ir/adstack_gate.h"
#include "quadrants/ir/constant.h"
#include "quadrants/ir/op_kinds.h"
#include "quadrants/ir/size_expr.h"
#include "quadrants/ir/stmt.h"

namespace quadrants::ir {

// ---- Values ---------------------------------------------------------------

class ConstStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kConst;
  explicit ConstStmt(Constant value)
      : Stmt(kKind, DataType::Scalar(value.type())), value_(value) {}
  const Constant& value() const { return value_; }
  bool is_pure() const override { return true; }

 private:
  Constant value_;
};

// The value of scalar kernel parameter `arg`.
class ArgLoadStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kArgLoad;
  ArgLoadStmt(int arg, PrimitiveType dtype)
      : Stmt(kKind, DataType::Scalar(dtype)), arg_(arg) {}
  int arg() const { return arg_; }
  bool is_pure() const override { return true; }

 private:
  int arg_;
};

// ---- Global memory --------------------------------------------------------

// Address of element [indices...] of ndarray parameter `arg`.
class NdarrayPtrStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kNdarrayPtr;
  NdarrayPtrStmt(int arg, PrimitiveType dtype, std::vector<Stmt*> indices)
      : Stmt(kKind, DataType::Pointer(dtype), std::move(indices)), arg_(arg) {}
  int arg() const { return arg_; }
  bool is_pure() const override { return true; }
  // The user's spelling of the array, e.g. "state", for error messages.
  const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }

 private:
  int arg_;
  std::string label_;
};

// arr.shape[axis] of ndarray parameter `arg`.
class NdarrayShapeStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kNdarrayShape;
  NdarrayShapeStmt(int arg, int axis)
      : Stmt(kKind, DataType::Scalar(PrimitiveType::kI32)),
        arg_(arg),
        axis_(axis) {}
  int arg() const { return arg_; }
  int axis() const { return axis_; }
  bool is_pure() const override { return true; }

 private:
  int arg_;
  int axis_;
};

// Address of element [indices...] of the field placed at SNode `snode_id`.
// A field under a pointer or dynamic level takes, once sparse accesses are
// lowered, one more operand: the i32 block of that level's pool holding it.
class FieldPtrStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kFieldPtr;
  FieldPtrStmt(int snode_id, PrimitiveType dtype, std::vector<Stmt*> indices,
               Stmt* block = nullptr)
      : Stmt(kKind, DataType::Pointer(dtype), std::move(indices)),
        snode_id_(snode_id) {
    if (block != nullptr) {
      AddOperand(block);
      has_block_ = true;
    }
  }
  int snode_id() const { return snode_id_; }
  size_t num_indices() const { return num_operands() - (has_block_ ? 1 : 0); }
  Stmt* index(size_t axis) const { return operand(axis); }
  Stmt* block() const { return has_block_ ? operand(num_indices()) : nullptr; }
  void set_block(Stmt* block) {
    if (has_block_) {
      set_operand(num_indices(), block);
      return;
    }
    AddOperand(block);
    has_block_ = true;
  }
  bool is_pure() const override { return true; }
  // The user's spelling of the field, e.g. "v" or "self.pos", for error
  // messages (field names may be generated).
  const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }

 private:
  int snode_id_;
  bool has_block_ = false;
  std::string label_;
};

// A sparse level's pool operations, for SNode `snode_id` (pointer or
// dynamic), on the i32 table entry `entry` of one of its cells:
// - kAcquire: the entry's block; an inactive cell first gets a block of
//   zeros from the pool (recording an error and giving the write-absorbing
//   block 1 when the pool is exhausted);
// - kRelease: clears the entry and returns its block, zeroed, to the pool.
enum class SNodeOpKind { kAcquire, kRelease };

class SNodeOpStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kSNodeOp;
  SNodeOpStmt(SNodeOpKind op, int snode_id, Stmt* entry)
      : Stmt(kKind,
             op == SNodeOpKind::kAcquire ? DataType::Scalar(PrimitiveType::kI32)
                                         : DataType::Void(),
             {entry}),
        op_(op),
        snode_id_(snode_id) {}
  SNodeOpKind op() const { return op_; }
  int snode_id() const { return snode_id_; }
  Stmt* entry() const { return operand(0); }
  bool has_side_effects() const override { return true; }
  // The user's spelling of the field whose write activates, for errors.
  const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }

 private:
  SNodeOpKind op_;
  int snode_id_;
  std::string label_;
};

class GlobalLoadStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kGlobalLoad;
  explicit GlobalLoadStmt(Stmt* ptr, bool is_volatile = false)
      : Stmt(kKind, DataType::Scalar(ptr->type().element()), {ptr}),
        is_volatile_(is_volatile) {}
  Stmt* ptr() const { return operand(0); }
  // qd.volatile_load: every execution reads memory (another thread may
  // have written it), so code generators emit a volatile load that their
  // optimizers neither hoist nor merge.
  bool is_volatile() const { return is_volatile_; }
  bool has_side_effects() const override { return is_volatile_; }

 private:
  bool is_volatile_;
};

class GlobalStoreStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kGlobalStore;
  GlobalStoreStmt(Stmt* ptr, Stmt* value)
      : Stmt(kKind, DataType::Void(), {ptr, value}) {}
  Stmt* ptr() const { return operand(0); }
  Stmt* value() const { return operand(1); }
  bool has_side_effects() const override { return true; }
};

// ---- Local variables ------------------------------------------------------

// A zero-initialized per-thread variable.
class AllocaStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAlloca;
  explicit AllocaStmt(PrimitiveType dtype)
      : Stmt(kKind, DataType::Pointer(dtype)) {}
};

class LocalLoadStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kLocalLoad;
  explicit LocalLoadStmt(Stmt* alloca)
      : Stmt(kKind, DataType::Scalar(alloca->type().element()), {alloca}) {}
  Stmt* alloca() const { return operand(0); }
};

class LocalStoreStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kLocalStore;
  LocalStoreStmt(Stmt* alloca, Stmt* value)
      : Stmt(kKind, DataType::Void(), {alloca, value}) {}
  Stmt* alloca() const { return operand(0); }
  Stmt* value() const { return operand(1); }
  bool has_side_effects() const override { return true; }
};

// ---- Arithmetic -----------------------------------------------------------

class UnaryOpStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kUnaryOp;
  // For kCast and kBitCast, `cast_to` is the destination type; other ops
  // ignore it and get their type from type checking.
  UnaryOpStmt(UnaryOpKind op, Stmt* operand,
              PrimitiveType cast_to = PrimitiveType::kI32)
      : Stmt(kKind,
             HasExplicitType(op) ? DataType::Scalar(cast_to)
                                 : DataType::Unknown(),
             {operand}),
        op_(op) {}
  UnaryOpKind op() const { return op_; }
  Stmt* input() const { return operand(0); }
  bool is_cast() const { return op_ == UnaryOpKind::kCast; }
  bool is_pure() const override { return true; }

 private:
  UnaryOpKind op_;
};

class BinaryOpStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kBinaryOp;
  BinaryOpStmt(BinaryOpKind op, Stmt* lhs, Stmt* rhs)
      : Stmt(kKind, DataType::Unknown(), {lhs, rhs}), op_(op) {}
  BinaryOpKind op() const { return op_; }
  Stmt* lhs() const { return operand(0); }
  Stmt* rhs() const { return operand(1); }
  bool is_pure() const override { return true; }

 private:
  BinaryOpKind op_;
};

// cond ? if_true : if_false, both sides evaluated.
class TernaryOpStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kTernaryOp;
  TernaryOpStmt(Stmt* cond, Stmt* if_true, Stmt* if_false)
      : Stmt(kKind, DataType::Unknown(), {cond, if_true, if_false}) {}
  Stmt* cond() const { return operand(0); }
  Stmt* if_true() const { return operand(1); }
  Stmt* if_false() const { return operand(2); }
  bool is_pure() const override { return true; }
};

// Atomically applies `op` with `value` at `ptr` and yields the old value.
// kCas has a third operand, `expected`: it stores `value` (the desired
// value) only where the element equals `expected`.
class AtomicOpStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAtomicOp;
  AtomicOpStmt(AtomicOpKind op, Stmt* ptr, Stmt* value,
               Stmt* expected = nullptr)
      : Stmt(kKind, DataType::Scalar(ptr->type().element()), {ptr, value}),
        op_(op) {
    if (expected != nullptr)
      AddOperand(expected);
  }
  AtomicOpKind op() const { return op_; }
  Stmt* ptr() const { return operand(0); }
  Stmt* value() const { return operand(1); }
  Stmt* expected() const { return num_operands() > 2 ? operand(2) : nullptr; }
  bool has_side_effects() const override { return true; }

 private:
  AtomicOpKind op_;
};

// ---- Control flow ---------------------------------------------------------

// for i in range(begin, end); bounds are evaluated once, before the loop.
class RangeForStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kRangeFor;
  RangeForStmt(Stmt* begin, Stmt* end)
      : Stmt(kKind, DataType::Void(), {begin, end}),
        body_(std::make_unique<Block>(this)) {}
  Stmt* begin() const { return operand(0); }
  Stmt* end() const { return operand(1); }
  Block* body() const { return body_.get(); }
  std::vector<Block*> blocks() const override { return {body_.get()}; }
  bool has_side_effects() const override { return true; }

 private:
  std::unique_ptr<Block> body_;
};

// for I in field: visits every cell of the dense SNode `snode_id`.
class StructForStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kStructFor;
  explicit StructForStmt(int snode_id)
      : Stmt(kKind, DataType::Void()),
        snode_id_(snode_id),
        body_(std::make_unique<Block>(this)) {}
  int snode_id() const { return snode_id_; }
  Block* body() const { return body_.get(); }
  std::vector<Block*> blocks() const override { return {body_.get()}; }
  bool has_side_effects() const override { return true; }

 private:
  int snode_id_;
  std::unique_ptr<Block> body_;
};

// The current index (along `axis`) of the enclosing loop given as operand:
// a range_for, struct_for or offloaded task.
class LoopIndexStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kLoopIndex;
  LoopIndexStmt(Stmt* loop, int axis)
      : Stmt(kKind, DataType::Scalar(PrimitiveType::kI32), {loop}),
        axis_(axis) {}
  Stmt* loop() const { return operand(0); }
  int axis() const { return axis_; }
  bool is_pure() const override { return true; }

 private:
  int axis_;
};

// Repeats its body until a break.
class WhileStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kWhile;
  WhileStmt()
      : Stmt(kKind, DataType::Void()), body_(std::make_unique<Block>(this)) {}
  Block* body() const { return body_.get(); }
  std::vector<Block*> blocks() const override { return {body_.get()}; }
  bool has_side_effects() const override { return true; }

 private:
  std::unique_ptr<Block> body_;
};

// Leaves the innermost enclosing loop.
class BreakStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kBreak;
  BreakStmt() : Stmt(kKind, DataType::Void()) {}
  bool has_side_effects() const override { return true; }
};

// Starts the next iteration of the innermost enclosing loop.
class ContinueStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kContinue;
  ContinueStmt() : Stmt(kKind, DataType::Void()) {}
  bool has_side_effects() const override { return true; }
};

class IfStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kIf;
  explicit IfStmt(Stmt* cond)
      : Stmt(kKind, DataType::Void(), {cond}),
        true_block_(std::make_unique<Block>(this)),
        false_block_(std::make_unique<Block>(this)) {}
  Stmt* cond() const { return operand(0); }
  Block* true_block() const { return true_block_.get(); }
  Block* false_block() const { return false_block_.get(); }
  std::vector<Block*> blocks() const override {
    return {true_block_.get(), false_block_.get()};
  }
  bool has_side_effects() const override { return true; }

 private:
  std::unique_ptr<Block> true_block_;
  std::unique_ptr<Block> false_block_;
};

// Fails the launch with `message` when `cond` is false (checked in debug
// mode). Extra operands are values formatted into the message.
class AssertStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAssert;
  AssertStmt(Stmt* cond, std::string message, std::vector<Stmt*> args = {})
      : Stmt(kKind, DataType::Void(), Prepend(cond, std::move(args))),
        message_(std::move(message)) {}
  Stmt* cond() const { return operand(0); }
  const std::string& message() const { return message_; }
  bool has_side_effects() const override { return true; }

 private:
  static std::vector<Stmt*> Prepend(Stmt* first, std::vector<Stmt*> rest) {
    rest.insert(rest.begin(), first);
    return rest;
  }
  std::string message_;
};

// One unit of launch, produced by the offload pass: a serial task runs its
// body once; a range_for task runs its body for every index in
// [begin, end), computed by the prologue right before the launch; a
// struct_for task runs its body for every cell of SNode `snode_id`.
class OffloadedTaskStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kOffloadedTask;
  explicit OffloadedTaskStmt(TaskKind task_kind, int snode_id = -1)
      : Stmt(kKind, DataType::Void()),
        task_kind_(task_kind),
        snode_id_(snode_id),
        prologue_(std::make_unique<Block>(this)),
        body_(std::make_unique<Block>(this)) {}

  TaskKind task_kind() const { return task_kind_; }
  int snode_id() const { return snode_id_; }
  // Bound computation (range_for only); evaluated serially before dispatch.
  Block* prologue() const { return prologue_.get(); }
  Block* body() const { return body_.get(); }
  // Range-for bounds: statements of the prologue.
  Stmt* begin() const { return num_operands() > 0 ? operand(0) : nullptr; }
  Stmt* end() const { return num_operands() > 1 ? operand(1) : nullptr; }
  void SetBounds(Stmt* begin, Stmt* end);
  // Both bounds are compile-time constants.
  bool has_const_bounds() const;

  std::vector<Block*> blocks() const override {
    return {prologue_.get(), body_.get()};
  }
  bool has_side_effects() const override { return true; }

 private:
  TaskKind task_kind_;
  int snode_id_;
  std::unique_ptr<Block> prologue_;
  std::unique_ptr<Block> body_;
};

// ---- Adstack (reverse-mode autodiff through dynamic loops) ----------------

// What a stack holds for a loop the launch may checkpoint: the per-iteration
// state of one segment (kSegment) or the carried state at every segment's
// start (kCheckpoint). The launch decides the segment length; see
// AdStackCapacityStmt.
enum class AdStackRole { kPlain, kSegment, kCheckpoint };

// A per-thread stack of `dtype` slots. Float stacks keep a (primal, adjoint)
// pair per slot. `max_size` is the capacity when known at compile time (0
// while unknown); `size_expr`, when set, gives it symbolically per launch.
// Stacks of one checkpointable loop share `checkpoint_group` (-1: none).
class AdStackAllocaStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAdStackAlloca;
  AdStackAllocaStmt(PrimitiveType dtype, int64_t max_size)
      : Stmt(kKind, DataType::AdStack(dtype)), max_size_(max_size) {}
  PrimitiveType dtype() const { return type().element(); }
  int64_t max_size() const { return max_size_; }
  void set_max_size(int64_t size) { max_size_ = size; }
  const SizeExpr::Ptr& size_expr() const { return size_expr_; }
  void set_size_expr(SizeExpr::Ptr expr) { size_expr_ = std::move(expr); }
  int checkpoint_group() const { return checkpoint_group_; }
  AdStackRole role() const { return role_; }
  void set_checkpoint(int group, AdStackRole role) {
    checkpoint_group_ = group;
    role_ = role;
  }

 private:
  int64_t max_size_;
  SizeExpr::Ptr size_expr_;
  int checkpoint_group_ = -1;
  AdStackRole role_ = AdStackRole::kPlain;
};

// The capacity (slots) the launch gave `stack`, as i32. A checkpointed
// loop's code reads it to choose its schedule: a kCheckpoint stack of
// capacity 2 or more means the loop runs in segments of (capacity of its
// kSegment stacks - 2) iterations.
class AdStackCapacityStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAdStackCapacity;
  explicit AdStackCapacityStmt(Stmt* stack)
      : Stmt(kKind, DataType::Scalar(PrimitiveType::kI32), {stack}) {}
  Stmt* stack() const { return operand(0); }
};

// The heap row holding this iteration's adstacks, as i32: where the launch
// sizes the heap by the iterations that pass `gate` (whose value is
// operand 0), each passing iteration claims a fresh row and the others get
// row 0 and push nothing; otherwise the thread's own slice. At most one per
// task, in the body's top level before every adstack of the task, which
// all live in its row.
class AdStackRowStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAdStackRow;
  AdStackRowStmt(Stmt* passes, AdStackGate gate)
      : Stmt(kKind, DataType::Scalar(PrimitiveType::kI32), {passes}),
        gate_(std::move(gate)) {}
  Stmt* passes() const { return operand(0); }
  const AdStackGate& gate() const { return gate_; }
  bool has_side_effects() const override { return true; }

 private:
  AdStackGate gate_;
};

class AdStackPushStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAdStackPush;
  AdStackPushStmt(Stmt* stack, Stmt* value)
      : Stmt(kKind, DataType::Void(), {stack, value}) {}
  Stmt* stack() const { return operand(0); }
  Stmt* value() const { return operand(1); }
  bool has_side_effects() const override { return true; }
};

class AdStackPopStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAdStackPop;
  explicit AdStackPopStmt(Stmt* stack)
      : Stmt(kKind, DataType::Void(), {stack}) {}
  Stmt* stack() const { return operand(0); }
  bool has_side_effects() const override { return true; }
};

// The primal value in the top slot.
class AdStackLoadTopStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAdStackLoadTop;
  explicit AdStackLoadTopStmt(Stmt* stack)
      : Stmt(kKind, DataType::Scalar(stack->type().element()), {stack}) {}
  Stmt* stack() const { return operand(0); }
};

// The adjoint accumulated in the top slot.
class AdStackLoadTopAdjStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAdStackLoadTopAdj;
  explicit AdStackLoadTopAdjStmt(Stmt* stack)
      : Stmt(kKind, DataType::Scalar(stack->type().element()), {stack}) {}
  Stmt* stack() const { return operand(0); }
};

// Adds `value` to the adjoint of the top slot.
class AdStackAccAdjointStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kAdStackAccAdjoint;
  AdStackAccAdjointStmt(Stmt* stack, Stmt* value)
      : Stmt(kKind, DataType::Void(), {stack, value}) {}
  Stmt* stack() const { return operand(0); }
  Stmt* value() const { return operand(1); }
  bool has_side_effects() const override { return true; }
};

// ---- Output and randomness -----------------------------------------------

// Writes `format.pieces[0]`, operand 0, `format.pieces[1]`, ... to the
// kernel's print buffer; the host shows the text at the next sync. Each
// operand is formatted by its spec in `format.specs` (see print_format.h).
class DebugPrintStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kDebugPrint;
  DebugPrintStmt(std::vector<std::string> pieces,
                 std::vector<std::string> specs, std::vector<Stmt*> values)
      : Stmt(kKind, DataType::Void(), std::move(values)),
        pieces_(std::move(pieces)),
        specs_(std::move(specs)) {}
  const std::vector<std::string>& pieces() const { return pieces_; }
  const std::vector<std::string>& specs() const { return specs_; }
  bool has_side_effects() const override { return true; }

 private:
  std::vector<std::string> pieces_;
  std::vector<std::string> specs_;
};

// A uniformly distributed value of `dtype` from the per-iteration random
// stream: floats in [0, 1), integers over every value of the type. Each one
// advances the stream, so two are never interchangeable.
class RandomStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kRandom;
  explicit RandomStmt(PrimitiveType dtype)
      : Stmt(kKind, DataType::Scalar(dtype)) {}
  bool has_side_effects() const override { return true; }
};

// qd.global_thread_idx(): the index of the thread running this code, an
// i32. On the CPU, the worker thread (SIMD lanes of one thread share it);
// on GPUs, block index * block size + thread index; on Vulkan, the global
// invocation index; 0 in serial tasks. Which thread runs an iteration may
// differ from run to run, so it is neither pure nor movable.
class ThreadIndexStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kThreadIndex;
  ThreadIndexStmt() : Stmt(kKind, DataType::Scalar(PrimitiveType::kI32)) {}
};

// ---- Block and subgroup cooperation (qd.simt) -----------------------------

// qd.simt.block.SharedArray: `num_elements` elements of `dtype` that every
// thread of a GPU block shares, uninitialized; its value is the address of
// element 0. Each statement is its own array, so it is never merged.
class SharedArrayStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kSharedArray;
  SharedArrayStmt(PrimitiveType dtype, int64_t num_elements)
      : Stmt(kKind, DataType::Pointer(dtype)), num_elements_(num_elements) {}
  int64_t num_elements() const { return num_elements_; }
  bool has_side_effects() const override { return true; }

 private:
  int64_t num_elements_;
};

// Address of element `index` (row-major, i32) of shared array `array`.
class SharedPtrStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kSharedPtr;
  SharedPtrStmt(Stmt* array, Stmt* index)
      : Stmt(kKind, array->type(), {array, index}) {}
  Stmt* array() const { return operand(0); }
  Stmt* index() const { return operand(1); }
  bool is_pure() const override { return true; }
};

// A block, subgroup or warp primitive (SimtOpKind). Every thread of the
// group must reach it together, so it is never moved, merged or dropped.
class SimtOpStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kSimtOp;
  SimtOpStmt(SimtOpKind op, DataType type, std::vector<Stmt*> operands)
      : Stmt(kKind, type, std::move(operands)), op_(op) {}
  SimtOpKind op() const { return op_; }
  bool has_side_effects() const override { return true; }

 private:
  SimtOpKind op_;
};

// ---- Real functions (compiled once, called, possibly recursively) ---------

// The value of parameter `index` of the enclosing function: a scalar, or a
// pointer to the caller's variable (a by-reference parameter or a result).
class FuncArgStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kFuncArg;
  FuncArgStmt(int index, DataType type) : Stmt(kKind, type), index_(index) {}
  int index() const { return index_; }
  bool is_pure() const override { return true; }

 private:
  int index_;
};

// Calls function `function` of the kernel with one operand per parameter
// (values for scalars, addresses of caller locals for pointer parameters).
// The callee may read and write any global memory and the locals passed to
// it, so a call is never moved, merged or deleted, and a local whose address
// it takes stays in memory.
class FuncCallStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kFuncCall;
  FuncCallStmt(int function, std::string name, std::vector<DataType> params,
               std::vector<Stmt*> args)
      : Stmt(kKind, DataType::Void(), std::move(args)),
        function_(function),
        name_(std::move(name)),
        params_(std::move(params)) {}
  int function() const { return function_; }
  const std::string& name() const { return name_; }
  // The callee's parameter types, one per operand.
  const std::vector<DataType>& params() const { return params_; }
  bool has_side_effects() const override { return true; }

 private:
  int function_;
  std::string name_;
  std::vector<DataType> params_;
};

// Leaves the enclosing function (its results are stored through its pointer
// parameters before).
class ReturnStmt : public Stmt {
 public:
  static constexpr StmtKind kKind = StmtKind::kReturn;
  ReturnStmt() : Stmt(kKind, DataType::Void()) {}
  bool has_side_effects() const override { return true; }
};

// Loops with an index: what a loop_index may refer to, and what `continue`
// may target.
inline bool IsIndexedLoop(const Stmt* stmt) {
  if (const auto* task = DynCast<OffloadedTaskStmt>(stmt)) {
    return task->task_kind() != TaskKind::kSerial;
  }
  return Isa<RangeForStmt>(stmt) || Isa<StructForStmt>(stmt);
}

// Loops a `break` may leave: range_for, struct_for and while statements,
// which run serially inside a task. The parallel loop of an offloaded task
// has no single iteration order to stop, so it is not one of them.
inline bool IsBreakableLoop(const Stmt* stmt) {
  return Isa<RangeForStmt>(stmt) || Isa<StructForStmt>(stmt) ||
         Isa<WhileStmt>(stmt);
}

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_STATEMENTS_H_
