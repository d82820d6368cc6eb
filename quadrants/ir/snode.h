#ifndef QUADRANTS_IR_SNODE_H_
#define QUADRANTS_IR_SNODE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/ir/types.h"

namespace quadrants::ir {

// One node of the structural tree that lays out fields in memory:
// root -> dense(axes, sizes) -> ... -> place(field). Every backend addresses
// field elements through the byte layout computed here.
struct SNode {
  enum class Kind { kRoot, kDense, kPlace };

  int id = -1;
  Kind kind = Kind::kRoot;
  int parent = -1;
  std::vector<int> children;

  // Dense: the axes this level indexes (0 = i, 1 = j, ...) and their sizes.
  std::vector<int> axes;
  std::vector<int64_t> sizes;

  // Place: the field's element type, and its gradient companion if any.
  PrimitiveType dtype = PrimitiveType::kI32;
  std::string name;
  bool is_grad = false;
  int grad_snode = -1;      // on a primal place: the place of its adjoint
  bool needs_grad = false;  // created with needs_grad: gradients must reach it
  int primal_snode = -1;    // on an adjoint place: the primal's place
  int dual_snode = -1;      // on a primal place: its forward-mode tangent

  // Layout (filled by SNodeTree::Finalize): bytes of one cell of this node
  // (for dense: one cell holds all children) and this node's byte offset
  // inside its parent's cell.
  int64_t cell_bytes = 0;
  int64_t offset_in_parent = 0;

  // Detached from the tree because its memory could not be allocated; its
  // id stays taken so no later field reuses it.
  bool discarded = false;
};

// One level's term of an element's address along one axis:
//   ((index / divisor) % modulus) * stride bytes,
// where modulus 0 (the axis' outermost level) takes no remainder.
struct AxisDigit {
  int64_t divisor = 1;
  int64_t modulus = 0;
  int64_t stride = 0;
};

// Where a place's element [i, j, ...] lives: the byte address is
//   offset + sum over axes a, over the digits of a, of its term.
// An axis indexed by one dense level has one digit, index * stride; one
// indexed by several (blocked layouts, dense(ij, 4).dense(ij, 8)) has a
// digit per level, outermost first.
struct PlaceLayout {
  int64_t offset = 0;
  std::vector<int64_t> shape;
  // Per axis: the stride of its only digit; 0 where it has several.
  std::vector<int64_t> axis_stride;
  std::vector<std::vector<AxisDigit>> digits;  // per axis
  // Whether every axis has at most one digit: the address is then
  // offset + sum of index[a] * axis_stride[a].
  bool affine() const;
  // The byte offset (from the root) of element `index`.
  int64_t ByteOffset(const std::vector<int64_t>& index) const;
};

class SNodeTree {
 public:
  SNodeTree();

  int root() const { return 0; }
  const SNode& node(int id) const { return nodes_.at(id); }
  int size() const { return static_cast<int>(nodes_.size()); }

  // Adds a dense level under `parent` indexing `axes` with `sizes`.
  absl::StatusOr<int> AddDense(int parent, std::vector<int> axes,
                               std::vector<int64_t> sizes);
  // Places a field of `dtype` under `parent` (root or dense).
  absl::StatusOr<int> AddPlace(int parent, PrimitiveType dtype,
                               std::string name);
  // Marks `grad` as the adjoint storage of `primal`.
  absl::Status LinkGrad(int primal, int grad);
  // Marks `dual` as the forward-mode tangent storage of `primal`.
  absl::Status LinkDual(int primal, int dual);
  // Records that `place` was created with needs_grad (its adjoint may be
  // placed later); reverse mode treats other fields as constants.
  absl::Status MarkNeedsGrad(int place);

  // Computes cell sizes and offsets. Afterwards only root-level additions
  // are allowed; they need another Finalize and leave existing offsets
  // unchanged, so compiled kernels stay valid and data can be copied over.
  absl::Status Finalize();
  bool finalized() const { return finalized_; }
  // Detaches every root-level subtree whose id is `first` or more (added
  // since a layout whose memory exists) and lays out the rest again, with
  // unchanged offsets. Their places answer Layout() with an error.
  void Discard(int first);
  // Total bytes of the root buffer.
  int64_t root_bytes() const { return nodes_[0].cell_bytes; }

  // The address arithmetic of a place (requires Finalize).
  absl::StatusOr<PlaceLayout> Layout(int place) const;
  // Number of indices a place takes (its field's dimensionality).
  int NumAxes(int place) const;
  // (axis, extent) of every axis the dense levels from `snode` up to the
  // root index (an axis several levels index spans the product of their
  // sizes), by axis: the index space a struct-for over `snode` walks.
  std::vector<std::pair<int, int64_t>> CellAxes(int snode) const;
  // How many cells that index space holds.
  int64_t NumCells(int snode) const;

  // e.g. "root{dense[i:4,j:8]{place x:f32 @0, place x.grad:f32 @4}}".
  std::string ToString() const;

 private:
  absl::Status CheckAcceptsChild(int parent) const;
  // A companion (adjoint or tangent) must be another place of the primal's
  // dtype and shape.
  absl::Status CheckCompanion(int primal, int companion,
                              absl::string_view what) const;
  std::vector<int> Ancestors(int id) const;  // root first, `id` excluded
  std::vector<int64_t> AxisSizes(int place) const;

  std::vector<SNode> nodes_;
  bool finalized_ = false;
};

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_SNODE_H_
