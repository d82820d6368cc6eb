#ifndef QUADRANTS_IR_SNODE_H_
#define QUADRANTS_IR_SNODE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/ir/types.h"

namespace quadrants::ir {

// The most axes a field or ndarray may have (upstream's limit).
inline constexpr int kMaxAxes = 12;

// One node of the structural tree that lays out fields in memory:
// root -> dense(axes, sizes) -> ... -> place(field). Every backend addresses
// field elements through the byte layout computed here.
//
// Sparse levels index axes like dense ones but hold only active cells:
// - bitmasked: dense storage plus an activity flag per cell;
// - pointer: a table of block numbers per cell; an active cell's children
//   live in a block of the node's pool (block 0 reads as zeros; block 1
//   absorbs writes that must not activate, and marks a cell while one
//   thread activates it);
// - dynamic: a list along one axis of at most `sizes[0]` elements, stored in
//   pool blocks of `chunk_size` elements, with a length per parent cell.
// Their bookkeeping (tables, flags, lengths, struct-for lists) is made of
// hidden places, so kernels reach it as they reach fields.
struct SNode {
  enum class Kind { kRoot, kDense, kPlace, kPointer, kBitmasked, kDynamic };

  int id = -1;
  Kind kind = Kind::kRoot;
  int parent = -1;
  std::vector<int> children;

  // Dense and sparse: the axes this level indexes (0 = i, 1 = j, ...) and
  // their sizes.
  std::vector<int> axes;
  std::vector<int64_t> sizes;

  // Sparse levels' hidden places (i32): `table` holds a pointer cell's block
  // (0: inactive), a dynamic list's block per chunk, or a bitmasked cell's
  // flag; `length` a dynamic list's length (under the parent); `list` and
  // `list_count` (under the root) the active cells a struct-for visits.
  int table = -1;
  int length = -1;
  int list = -1;
  int list_count = -1;
  int64_t chunk_size = 0;  // dynamic: elements per block
  bool hidden = false;     // made by the tree for a sparse level
  // Pointer and dynamic pools (filled by Finalize): `pool_blocks` blocks of
  // `block_bytes` at root offset `pool_offset`, the first two reserved; the
  // allocator's state (next fresh block, free count, free bitmap) at
  // `pool_state_offset`.
  int64_t block_bytes = 0;
  int64_t pool_blocks = 0;
  int64_t pool_offset = 0;
  int64_t pool_state_offset = 0;

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
  // Under a pointer or dynamic level: the nearest such level, whose block
  // (found through its table) is the base the offset and digits start from;
  // the address is root + pool_offset + block * block_bytes + offset + ....
  int pool_node = -1;
  int64_t pool_offset = 0;
  int64_t block_bytes = 0;
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
  // Adds a pointer or bitmasked level (like AddDense), or a dynamic one
  // (one axis, `sizes[0]` elements at most, blocks of `chunk_size`), with
  // its hidden places.
  absl::StatusOr<int> AddSparse(int parent, SNode::Kind kind,
                                std::vector<int> axes,
                                std::vector<int64_t> sizes,
                                int64_t chunk_size = 0);
  // Bytes each pointer or dynamic pool may take (0: enough for every cell).
  void set_pool_budget(int64_t bytes) { pool_budget_ = bytes; }
  // Places a field of `dtype` under `parent` (root, dense or sparse).
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
  // The extent of every axis 0..n-1 of `snode`'s index space (1 where no
  // level indexes it); for a place, its field's shape.
  std::vector<int64_t> Extents(int snode) const;
  // The sparse levels above `snode` (itself included when sparse), root
  // first.
  std::vector<int> SparseAncestors(int snode) const;
  bool has_sparse() const { return has_sparse_; }

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

  absl::StatusOr<int> AddLevel(int parent, SNode::Kind kind,
                               std::vector<int> axes,
                               std::vector<int64_t> sizes);
  absl::StatusOr<int> AddHiddenPlace(int parent, std::vector<int> axes,
                                     std::vector<int64_t> sizes,
                                     std::string name);
  int64_t PlacePools(int root_child, int64_t at);

  std::vector<SNode> nodes_;
  bool finalized_ = false;
  bool has_sparse_ = false;
  int64_t pool_budget_ = 0;
};

inline bool IsSparse(SNode::Kind kind) {
  return kind == SNode::Kind::kPointer || kind == SNode::Kind::kBitmasked ||
         kind == SNode::Kind::kDynamic;
}
// Pointer and dynamic levels keep their cells' children in pool blocks.
inline bool OwnsPool(SNode::Kind kind) {
  return kind == SNode::Kind::kPointer || kind == SNode::Kind::kDynamic;
}
// Levels that index axes: dense and sparse ones.
inline bool IndexesAxes(SNode::Kind kind) {
  return kind == SNode::Kind::kDense || IsSparse(kind);
}
const char* SNodeKindName(SNode::Kind kind);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_SNODE_H_
