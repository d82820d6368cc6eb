#ifndef QUADRANTS_IR_SIZE_EXPR_H_
#define QUADRANTS_IR_SIZE_EXPR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace quadrants::ir {

// The symbolic capacity of one adstack: an immutable expression over values
// known at launch time (field values, ndarray shapes and contents), which
// the launcher evaluates right before dispatch.
enum class SizeExprKind : int {
  kConst = 0,        // value
  kBoundVar,         // the variable `var_id` of an enclosing MaxOverRange
  kFieldLoad,        // field at SNode `snode_id`, [children...] as indices
  kNdarrayShape,     // ndarray parameter `arg`, .shape[axis]
  kNdarrayRead,      // ndarray parameter `arg`, [children...] as indices
  kLoopIndexMax,     // largest index of a loop whose end is child 0
  kStackLoadTopMax,  // largest value pushed onto a stash stack: child 0
  kAdd,              // child 0 + child 1
  kSub,              // child 0 - child 1
  kMul,              // child 0 * child 1
  kMax,              // max(child 0, child 1)
  kMaxOverRange,     // max of child 2 for var_id in [child 0, child 1)
  kArgValue,         // the value of scalar kernel parameter `arg`
  kFloorDiv,         // child 0 // child 1 (Python semantics; 0 if divisor 0)
  kMod,              // child 0 % child 1 (Python semantics; 0 if divisor 0)
};

class SizeExpr {
 public:
  using Ptr = std::shared_ptr<const SizeExpr>;

  static Ptr Const(int64_t value);
  static Ptr BoundVar(int var_id);
  static Ptr FieldLoad(int snode_id, std::vector<Ptr> indices);
  static Ptr NdarrayShape(int arg, int axis);
  static Ptr NdarrayRead(int arg, std::vector<Ptr> indices);
  static Ptr LoopIndexMax(Ptr loop_end);
  static Ptr StackLoadTopMax(Ptr pushed_max);
  static Ptr Add(Ptr a, Ptr b);
  static Ptr Sub(Ptr a, Ptr b);
  static Ptr Mul(Ptr a, Ptr b);
  static Ptr Max(Ptr a, Ptr b);
  static Ptr MaxOverRange(int var_id, Ptr begin, Ptr end, Ptr body);
  static Ptr ArgValue(int arg);
  static Ptr FloorDiv(Ptr a, Ptr b);
  static Ptr Mod(Ptr a, Ptr b);

  SizeExprKind kind() const { return kind_; }
  int64_t value() const { return value_; }
  int var_id() const { return var_id_; }
  int snode_id() const { return snode_id_; }
  int arg() const { return arg_; }
  int axis() const { return axis_; }
  const std::vector<Ptr>& children() const { return children_; }

  // e.g. "(max_over_range(v0 in [0, shape(arg1, 0)), read(arg1)[v0]) + 2)".
  std::string ToString() const;
  bool Equals(const SizeExpr& other) const;
  // Stable across processes: depends on structure only.
  uint64_t Hash() const;

  // Public for std::make_shared only; the Key keeps callers on the factories.
  class Key {
    friend class SizeExpr;
    Key() = default;
  };
  SizeExpr(Key, SizeExprKind kind, std::vector<Ptr> children)
      : kind_(kind), children_(std::move(children)) {}

 private:
  static std::shared_ptr<SizeExpr> Make(SizeExprKind kind,
                                        std::vector<Ptr> children = {});

  SizeExprKind kind_;
  int64_t value_ = 0;
  int var_id_ = -1;
  int snode_id_ = -1;
  int arg_ = -1;
  int axis_ = -1;
  std::vector<Ptr> children_;
};

// The flat post-order form: children precede their parent and the root is
// the last node. This is what travels with a compiled kernel.
struct FlatSizeExprNode {
  SizeExprKind kind = SizeExprKind::kConst;
  int64_t value = 0;
  int var_id = -1;
  int snode_id = -1;
  int arg = -1;
  int axis = -1;
  std::vector<int> children;  // indices of earlier nodes

  friend bool operator==(const FlatSizeExprNode& a, const FlatSizeExprNode& b);
};

std::vector<FlatSizeExprNode> Flatten(const SizeExpr& expr);

// Rebuilds a tree, rejecting malformed input (forward or out-of-range
// child indices, wrong child counts, unknown kinds, empty lists, nodes the
// root does not reach, and shared DAGs that expand past 2^20 nodes, which
// would make tree walks explode).
absl::StatusOr<SizeExpr::Ptr> Unflatten(
    const std::vector<FlatSizeExprNode>& nodes);

// Protobuf bytes of the flat form, and back.
std::string SerializeSizeExpr(const SizeExpr& expr);
absl::StatusOr<SizeExpr::Ptr> DeserializeSizeExpr(const std::string& bytes);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_SIZE_EXPR_H_
