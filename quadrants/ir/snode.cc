#include "quadrants/ir/snode.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::ir {
namespace {

int64_t AlignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

int64_t ElementBytes(PrimitiveType type) {
  return std::max<int64_t>(1, BitWidth(type) / 8);
}

// Natural alignment: an element's own size; a dense block its most aligned
// child's (so nested dense levels pack without padding, as upstream's do);
// other levels 8 bytes.
int64_t Alignment(const std::vector<SNode>& nodes, const SNode& node) {
  if (node.kind == SNode::Kind::kPlace)
    return ElementBytes(node.dtype);
  if (node.kind != SNode::Kind::kDense)
    return 8;
  int64_t alignment = 1;
  for (int child : node.children)
    alignment = std::max(alignment, Alignment(nodes, nodes[child]));
  return alignment;
}

absl::Status TreeError(absl::string_view message) {
  return MakeError(ErrorKind::kCompilation, message);
}

}  // namespace

SNodeTree::SNodeTree() {
  SNode root;
  root.id = 0;
  root.kind = SNode::Kind::kRoot;
  nodes_.push_back(root);
}

absl::Status SNodeTree::CheckAcceptsChild(int parent) const {
  if (finalized_ && parent != root()) {
    // Growing a laid-out dense level would move its existing cells.
    return TreeError(
        absl::StrCat("SNode ", parent,
                     " is already laid out; after the first use of "
                     "fields, new fields can only be added under the root"));
  }
  if (parent < 0 || parent >= size()) {
    return TreeError(absl::StrCat("no SNode with id ", parent));
  }
  if (nodes_[parent].kind == SNode::Kind::kPlace) {
    return TreeError(
        absl::StrCat("SNode ", parent, " is a place and cannot have children"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> SNodeTree::AxisSizes(int place) const {
  std::vector<int64_t> sizes(NumAxes(place), 1);
  for (int a : Ancestors(place)) {
    for (size_t k = 0; k < nodes_[a].axes.size(); ++k) {
      sizes[nodes_[a].axes[k]] *= nodes_[a].sizes[k];
    }
  }
  return sizes;
}

std::vector<int> SNodeTree::Ancestors(int id) const {
  std::vector<int> chain;
  for (int p = nodes_[id].parent; p >= 0; p = nodes_[p].parent) {
    chain.push_back(p);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

absl::StatusOr<int> SNodeTree::AddDense(int parent, std::vector<int> axes,
                                        std::vector<int64_t> sizes) {
  return AddLevel(parent, SNode::Kind::kDense, std::move(axes),
                  std::move(sizes));
}

absl::StatusOr<int> SNodeTree::AddLevel(int parent, SNode::Kind kind,
                                        std::vector<int> axes,
                                        std::vector<int64_t> sizes) {
  if (absl::Status s = CheckAcceptsChild(parent); !s.ok())
    return s;
  const char* what = SNodeKindName(kind);
  if (axes.empty() || axes.size() != sizes.size()) {
    return TreeError(absl::StrCat(what, " needs one size per axis, got ",
                                  axes.size(), " axes and ", sizes.size(),
                                  " sizes"));
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] < 0 || axes[k] >= kMaxAxes) {
      return TreeError(absl::StrCat("axis ", axes[k], " out of range [0, ",
                                    kMaxAxes, ")"));
    }
    if (sizes[k] <= 0) {
      return TreeError(
          absl::StrCat(what, " size must be positive, got ", sizes[k]));
    }
    if (std::count(axes.begin(), axes.end(), axes[k]) > 1) {
      return TreeError(absl::StrCat("axis ", axes[k], " is given twice in one ",
                                    what, " level"));
    }
  }
  finalized_ = false;
  SNode node;
  node.id = size();
  node.kind = kind;
  node.parent = parent;
  node.axes = std::move(axes);
  node.sizes = std::move(sizes);
  nodes_.push_back(node);
  nodes_[parent].children.push_back(node.id);
  return node.id;
}

absl::StatusOr<int> SNodeTree::AddHiddenPlace(int parent,
                                              std::vector<int> axes,
                                              std::vector<int64_t> sizes,
                                              std::string name) {
  int holder = parent;
  if (!axes.empty()) {
    QD_ASSIGN_OR_RETURN(holder, AddDense(parent, std::move(axes),
                                         std::move(sizes)));
    nodes_[holder].hidden = true;
  }
  QD_ASSIGN_OR_RETURN(int place,
                      AddPlace(holder, PrimitiveType::kI32, std::move(name)));
  nodes_[place].hidden = true;
  return place;
}

absl::StatusOr<int> SNodeTree::AddSparse(int parent, SNode::Kind kind,
                                         std::vector<int> axes,
                                         std::vector<int64_t> sizes,
                                         int64_t chunk_size) {
  if (!IsSparse(kind))
    return TreeError("AddSparse takes a pointer, bitmasked or dynamic level");
  const bool dynamic = kind == SNode::Kind::kDynamic;
  if (dynamic && axes.size() != 1) {
    return TreeError(absl::StrCat("dynamic indexes exactly one axis, got ",
                                  axes.size()));
  }
  if (dynamic && (chunk_size <= 0 || sizes.empty() || sizes[0] <= 0)) {
    return TreeError(absl::StrCat("dynamic needs a positive size and "
                                  "chunk_size, got ",
                                  sizes.empty() ? 0 : sizes[0], " and ",
                                  chunk_size));
  }
  std::vector<int64_t> table_sizes = sizes;
  const std::vector<int> table_axes = axes;
  if (parent >= 0 && parent < size()) {
    int64_t cells = NumCells(parent);
    for (int64_t n : sizes)
      cells *= std::max<int64_t>(n, 1);
    if (cells > (int64_t{1} << 31) - 1) {
      return TreeError(absl::StrCat(
          "a ", SNodeKindName(kind), " level of ", cells,
          " cells: sparse levels index their cells with 32 bits"));
    }
  }
  QD_ASSIGN_OR_RETURN(const int id, AddLevel(parent, kind, std::move(axes),
                                             std::move(sizes)));
  has_sparse_ = true;
  nodes_[id].chunk_size = dynamic ? chunk_size : 0;
  const int64_t cells = NumCells(id);
  const std::string prefix = absl::StrCat("snode", id);
  if (dynamic)
    table_sizes[0] = (table_sizes[0] + chunk_size - 1) / chunk_size;
  QD_ASSIGN_OR_RETURN(const int table,
                      AddHiddenPlace(parent, table_axes, table_sizes,
                                     absl::StrCat(prefix, ".table")));
  nodes_[id].table = table;
  if (dynamic) {
    QD_ASSIGN_OR_RETURN(const int length,
                        AddHiddenPlace(parent, {}, {},
                                       absl::StrCat(prefix, ".length")));
    nodes_[id].length = length;
    return id;
  }
  QD_ASSIGN_OR_RETURN(const int list,
                      AddHiddenPlace(root(), {0}, {cells},
                                     absl::StrCat(prefix, ".list")));
  QD_ASSIGN_OR_RETURN(const int count,
                      AddHiddenPlace(root(), {}, {},
                                     absl::StrCat(prefix, ".list_count")));
  nodes_[id].list = list;
  nodes_[id].list_count = count;
  return id;
}

absl::StatusOr<int> SNodeTree::AddPlace(int parent, PrimitiveType dtype,
                                        std::string name) {
  if (absl::Status s = CheckAcceptsChild(parent); !s.ok())
    return s;
  finalized_ = false;
  SNode node;
  node.id = size();
  node.kind = SNode::Kind::kPlace;
  node.parent = parent;
  node.dtype = dtype;
  node.name = std::move(name);
  nodes_.push_back(node);
  nodes_[parent].children.push_back(node.id);
  return node.id;
}

absl::Status SNodeTree::CheckCompanion(int primal, int companion,
                                       absl::string_view what) const {
  for (int id : {primal, companion}) {
    if (id < 0 || id >= size() || nodes_[id].kind != SNode::Kind::kPlace) {
      return TreeError(absl::StrCat("SNode ", id, " is not a place"));
    }
  }
  if (primal == companion) {
    return TreeError(absl::StrCat("a field cannot be its own ", what));
  }
  if (nodes_[primal].dtype != nodes_[companion].dtype) {
    return TreeError(
        absl::StrCat("a ", what, " field must have its primal's dtype"));
  }
  if (AxisSizes(primal) != AxisSizes(companion)) {
    return TreeError(absl::StrCat(what, " field '", nodes_[companion].name,
                                  "' must have the shape of its primal '",
                                  nodes_[primal].name, "'"));
  }
  return absl::OkStatus();
}

absl::Status SNodeTree::LinkGrad(int primal, int grad) {
  QD_RETURN_IF_ERROR(CheckCompanion(primal, grad, "gradient"));
  nodes_[primal].grad_snode = grad;
  nodes_[primal].needs_grad = true;
  nodes_[grad].primal_snode = primal;
  nodes_[grad].is_grad = true;
  return absl::OkStatus();
}

absl::Status SNodeTree::LinkDual(int primal, int dual) {
  QD_RETURN_IF_ERROR(CheckCompanion(primal, dual, "dual"));
  nodes_[primal].dual_snode = dual;
  nodes_[dual].primal_snode = primal;
  return absl::OkStatus();
}

absl::Status SNodeTree::MarkNeedsGrad(int place) {
  if (place < 0 || place >= size() ||
      nodes_[place].kind != SNode::Kind::kPlace) {
    return TreeError(absl::StrCat("SNode ", place, " is not a place"));
  }
  nodes_[place].needs_grad = true;
  return absl::OkStatus();
}

absl::Status SNodeTree::Finalize() {
  if (finalized_)
    return absl::OkStatus();
  // Re-running after root-level additions keeps every existing offset: new
  // children are packed after the old ones.
  // Children have larger ids than parents, so a reverse sweep sizes leaves
  // first. A cell packs its children in order, each at its natural
  // alignment, and rounds up to the largest one (as a C struct would).
  for (int id = size() - 1; id >= 0; --id) {
    SNode& node = nodes_[id];
    if (node.kind == SNode::Kind::kPlace) {
      node.cell_bytes = ElementBytes(node.dtype);
      continue;
    }
    int64_t cell = 0;
    int64_t alignment = 1;
    for (int child : node.children) {
      SNode& c = nodes_[child];
      // A pointer or dynamic level's cells live in its pool.
      int64_t child_bytes = OwnsPool(c.kind) ? 0 : c.cell_bytes;
      if (IndexesAxes(c.kind)) {
        for (int64_t s : c.sizes)
          child_bytes *= s;
      }
      // Each field's memory starts 8-byte aligned.
      const int64_t child_alignment =
          node.kind == SNode::Kind::kRoot
              ? std::max<int64_t>(8, Alignment(nodes_, c))
              : Alignment(nodes_, c);
      alignment = std::max(alignment, child_alignment);
      cell = AlignUp(cell, child_alignment);
      c.offset_in_parent = cell;
      cell += child_bytes;
      // A root child's pools follow its data, so later root children leave
      // them where they are.
      if (node.kind == SNode::Kind::kRoot)
        cell = PlacePools(child, cell);
    }
    if (node.kind == SNode::Kind::kRoot)
      alignment = 8;
    node.cell_bytes = AlignUp(std::max<int64_t>(cell, 1), alignment);
    if (node.kind == SNode::Kind::kPointer)
      node.block_bytes = node.cell_bytes;
    if (node.kind == SNode::Kind::kDynamic)
      node.block_bytes = node.cell_bytes * node.chunk_size;
  }
  finalized_ = true;
  return absl::OkStatus();
}

int64_t SNodeTree::PlacePools(int root_child, int64_t at) {
  std::vector<int> stack = {root_child};
  while (!stack.empty()) {
    SNode& n = nodes_[stack.back()];
    stack.pop_back();
    for (auto it = n.children.rbegin(); it != n.children.rend(); ++it)
      stack.push_back(*it);
    if (!OwnsPool(n.kind))
      continue;
    // Enough blocks for every cell (a dynamic list's every chunk), or what
    // the budget holds.
    int64_t blocks = NumCells(n.table);
    if (pool_budget_ > 0)
      blocks = std::min(blocks, std::max<int64_t>(1, pool_budget_ /
                                                         n.block_bytes));
    n.pool_blocks = blocks + 2;
    n.pool_state_offset = AlignUp(at, 8);
    at = n.pool_state_offset + 8 + 4 * ((n.pool_blocks + 31) / 32);
    n.pool_offset = AlignUp(at, 8);
    at = n.pool_offset + n.pool_blocks * n.block_bytes;
  }
  return at;
}

void SNodeTree::Discard(int first) {
  std::vector<int>& top = nodes_[0].children;
  top.erase(std::remove_if(top.begin(), top.end(),
                           [first](int child) { return child >= first; }),
            top.end());
  for (int id = std::max(first, 1); id < size(); ++id)
    nodes_[id].discarded = true;
  finalized_ = false;
  (void)Finalize();
}

absl::StatusOr<PlaceLayout> SNodeTree::Layout(int place) const {
  if (!finalized_)
    return TreeError("SNode tree layout is not finalized");
  if (place < 0 || place >= size() ||
      nodes_[place].kind != SNode::Kind::kPlace) {
    return TreeError(absl::StrCat("SNode ", place, " is not a place"));
  }
  if (nodes_[place].discarded) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("field '", nodes_[place].name,
                                  "' holds no memory: allocating it failed"));
  }
  PlaceLayout layout;
  const int axes = NumAxes(place);
  layout.shape.assign(axes, 1);
  layout.axis_stride.assign(axes, 0);
  layout.digits.assign(axes, {});
  std::vector<int> chain = Ancestors(place);
  chain.push_back(place);
  // Under a pointer or dynamic level the address starts at the block of
  // the nearest one; a dynamic level's own digit picks the element inside
  // its block.
  size_t start = 1;
  for (size_t k = 1; k < chain.size(); ++k) {
    const SNode& c = nodes_[chain[k]];
    if (!OwnsPool(c.kind))
      continue;
    start = k + 1;
    layout.pool_node = c.id;
    layout.pool_offset = c.pool_offset;
    layout.block_bytes = c.block_bytes;
    layout.offset = 0;
    for (auto& axis : layout.digits)
      axis.clear();
    if (c.kind == SNode::Kind::kDynamic)
      layout.digits[c.axes[0]].push_back({1, c.chunk_size, c.cell_bytes});
  }
  // Walk down: entering node c adds its offset inside the parent's cell;
  // a level's own axes index c's cells (row-major within the level), one
  // digit of each of its axes.
  for (size_t k = start; k < chain.size(); ++k) {
    const SNode& c = nodes_[chain[k]];
    layout.offset += c.offset_in_parent;
    if (!IndexesAxes(c.kind))
      continue;
    int64_t stride = c.cell_bytes;
    for (int a = static_cast<int>(c.axes.size()) - 1; a >= 0; --a) {
      layout.digits[c.axes[a]].push_back({1, c.sizes[a], stride});
      stride *= c.sizes[a];
    }
  }
  // Divisors from the inner levels' sizes; the outermost digit wraps never
  // (inside a block every digit wraps).
  const std::vector<int64_t> extents = Extents(place);
  for (int a = 0; a < axes; ++a) {
    std::vector<AxisDigit>& digits = layout.digits[a];
    int64_t inner = 1;
    for (int d = static_cast<int>(digits.size()) - 1; d >= 0; --d) {
      digits[d].divisor = inner;
      inner *= digits[d].modulus;
    }
    layout.shape[a] = a < static_cast<int>(extents.size()) ? extents[a] : 1;
    if (!digits.empty() && layout.pool_node < 0)
      digits[0].modulus = 0;
    if (digits.size() == 1 && layout.pool_node < 0)
      layout.axis_stride[a] = digits[0].stride;
  }
  return layout;
}

bool PlaceLayout::affine() const {
  if (pool_node >= 0)
    return false;
  for (const auto& axis : digits) {
    if (axis.size() > 1)
      return false;
  }
  return true;
}

int64_t PlaceLayout::ByteOffset(const std::vector<int64_t>& index) const {
  int64_t bytes = offset;
  for (size_t a = 0; a < index.size() && a < digits.size(); ++a) {
    for (const AxisDigit& d : digits[a]) {
      int64_t i = index[a] / d.divisor;
      if (d.modulus > 0)
        i %= d.modulus;
      bytes += i * d.stride;
    }
  }
  return bytes;
}

int SNodeTree::NumAxes(int place) const {
  int count = 0;
  for (int a : Ancestors(place)) {
    for (int axis : nodes_[a].axes)
      count = std::max(count, axis + 1);
  }
  return count;
}

std::string SNodeTree::ToString() const {
  std::function<std::string(int)> print = [&](int id) -> std::string {
    const SNode& n = nodes_[id];
    std::string children =
        absl::StrJoin(n.children, ", ",
                      [&](std::string* out, int c) { out->append(print(c)); });
    switch (n.kind) {
      case SNode::Kind::kRoot:
        return absl::StrCat("root{", children, "}");
      case SNode::Kind::kDense:
      case SNode::Kind::kPointer:
      case SNode::Kind::kBitmasked:
      case SNode::Kind::kDynamic: {
        std::vector<std::string> dims;
        for (size_t k = 0; k < n.axes.size(); ++k) {
          dims.push_back(absl::StrCat(std::string(1, "ijklmnop"[n.axes[k]]),
                                      ":", n.sizes[k]));
        }
        return absl::StrCat(SNodeKindName(n.kind), "[",
                            absl::StrJoin(dims, ","), "]{", children, "}");
      }
      case SNode::Kind::kPlace:
        return absl::StrCat("place ", n.name, ":", PrimitiveTypeName(n.dtype),
                            " @", n.offset_in_parent);
    }
    return "?";
  };
  return print(0);
}

std::vector<std::pair<int, int64_t>> SNodeTree::CellAxes(int snode) const {
  std::vector<std::pair<int, int64_t>> axes;
  for (int id = snode; id >= 0; id = nodes_[id].parent) {
    const SNode& n = nodes_[id];
    for (size_t k = 0; k < n.axes.size(); ++k) {
      // An axis several levels index spans the product of their sizes.
      auto same = std::find_if(axes.begin(), axes.end(), [&](const auto& e) {
        return e.first == n.axes[k];
      });
      if (same != axes.end())
        same->second *= n.sizes[k];
      else
        axes.emplace_back(n.axes[k], n.sizes[k]);
    }
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

std::vector<int64_t> SNodeTree::Extents(int snode) const {
  std::vector<int> chain = Ancestors(snode);
  chain.push_back(snode);
  std::vector<int64_t> extents;
  for (int id : chain) {
    const SNode& n = nodes_[id];
    for (size_t k = 0; k < n.axes.size(); ++k) {
      if (static_cast<int>(extents.size()) <= n.axes[k])
        extents.resize(n.axes[k] + 1, 1);
      extents[n.axes[k]] *= n.sizes[k];
    }
  }
  return extents;
}

std::vector<int> SNodeTree::SparseAncestors(int snode) const {
  std::vector<int> chain = Ancestors(snode);
  chain.push_back(snode);
  std::vector<int> sparse;
  for (int id : chain) {
    if (IsSparse(nodes_[id].kind))
      sparse.push_back(id);
  }
  return sparse;
}

const char* SNodeKindName(SNode::Kind kind) {
  switch (kind) {
    case SNode::Kind::kRoot:
      return "root";
    case SNode::Kind::kDense:
      return "dense";
    case SNode::Kind::kPlace:
      return "place";
    case SNode::Kind::kPointer:
      return "pointer";
    case SNode::Kind::kBitmasked:
      return "bitmasked";
    case SNode::Kind::kDynamic:
      return "dynamic";
  }
  return "?";
}

int64_t SNodeTree::NumCells(int snode) const {
  int64_t cells = 1;
  for (const auto& [axis, extent] : CellAxes(snode))
    cells *= extent;
  return cells;
}

}  // namespace quadrants::ir
