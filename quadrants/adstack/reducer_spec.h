#ifndef QUADRANTS_ADSTACK_REDUCER_SPEC_H_
#define QUADRANTS_ADSTACK_REDUCER_SPEC_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "quadrants/ir/size_expr.h"

namespace quadrants::adstack {

// Identifies one captured MaxOverRange: the kernel, the task, the stack
// within the task, and the node's post-order index in that stack's tree.
// Stable across processes, since the tree's structure is.
struct ReducerKey {
  std::string kernel;
  int task = 0;
  int stack = 0;
  int node = 0;

  std::string ToString() const;
  friend bool operator==(const ReducerKey& a, const ReducerKey& b) {
    return a.kernel == b.kernel && a.task == b.task && a.stack == b.stack &&
           a.node == b.node;
  }
};

// One index of a body read: a constant or an axis of the spec.
struct ReadIndex {
  bool is_axis = false;
  int64_t value = 0;  // the axis number, or the constant
};

// A leaf read of the body: an ndarray parameter or a field place.
struct BodyRead {
  bool is_field = false;
  int id = 0;  // the ndarray's parameter index, or the place's SNode id
  std::vector<ReadIndex> indices;
};

// Body bytecode: straight-line code where instruction k defines value k,
// operands name earlier values, and the last instruction is the result.
enum class BodyOp : uint8_t {
  kConst,  // value
  kAxis,   // the coordinate of axis `a`
  kShape,  // ndarray parameter `a`, .shape[b] (a constant per launch)
  kArg,    // scalar parameter `a` (a constant per launch)
  kRead,   // reads[a]
  kAdd,    // a + b
  kSub,    // a - b
  kMul,    // a * b
  kMax,    // max(a, b)
};

struct BodyInstr {
  BodyOp op = BodyOp::kConst;
  int a = -1;
  int b = -1;
  int64_t value = 0;
  friend bool operator==(const BodyInstr& x, const BodyInstr& y) {
    return x.op == y.op && x.a == y.a && x.b == y.b && x.value == y.value;
  }
};

struct ReducerBody {
  std::vector<BodyInstr> code;
  std::vector<BodyRead> reads;
};

// A MaxOverRange chain that the max-reducers evaluate in parallel: the
// maximum of `body` over the cross product of the axes' ranges.
struct ReducerSpec {
  ReducerKey key;
  const ir::SizeExpr* node = nullptr;  // the outermost captured node
  int num_axes = 0;
  // Per axis, outermost first. Closed expressions: they read no bound
  // variable, and captured nodes in them are other specs (see `deps`).
  std::vector<ir::SizeExpr::Ptr> begin;
  std::vector<ir::SizeExpr::Ptr> end;
  ReducerBody body;
  std::vector<int> deps;  // indices of earlier specs in the same list
  int depth = 0;          // 0 without deps, else 1 + the deepest dep's
};

// The bit width of a leaf's element type: an ndarray parameter (is_field
// false) or a field place; 0 when unknown.
using LeafWidthFn = std::function<int(bool is_field, int id)>;

// Finds every MaxOverRange of `tree` whose body fits the reducers' grammar
// and returns it in dependency order (a spec's deps precede it). Grammar:
// a chain of nested MaxOverRanges over distinct variables, whose bounds
// read no bound variable, around a body made of constants, ndarray
// shapes, scalar parameters, the chain's variables, integer ndarray and
// field reads of at most 32 bits indexed by constants or the chain's
// variables, and + - * max. Wider reads are left out because the serial
// walk, not the reducers, owns values whose range needs 64 bits.
std::vector<ReducerSpec> RecognizeReducerSpecs(const std::string& kernel,
                                               int task, int stack,
                                               const ir::SizeExpr& tree,
                                               const LeafWidthFn& leaf_width);

// `tree` with each node in `values` replaced by a constant.
ir::SizeExpr::Ptr SubstituteConstants(
    const ir::SizeExpr::Ptr& tree,
    const absl::flat_hash_map<const ir::SizeExpr*, int64_t>& values);

}  // namespace quadrants::adstack

#endif  // QUADRANTS_ADSTACK_REDUCER_SPEC_H_
