#include "quadrants/ir/size_expr.h"

#include <algorithm>
#include <cassert>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/size_expr.pb.h"

namespace quadrants::ir {
namespace {

// Child count per kind; -1 means "any number" (index lists).
int Arity(SizeExprKind kind) {
  switch (kind) {
    case SizeExprKind::kConst:
    case SizeExprKind::kBoundVar:
    case SizeExprKind::kNdarrayShape:
    case SizeExprKind::kArgValue:
      return 0;
    case SizeExprKind::kLoopIndexMax:
    case SizeExprKind::kStackLoadTopMax:
      return 1;
    case SizeExprKind::kAdd:
    case SizeExprKind::kSub:
    case SizeExprKind::kMul:
    case SizeExprKind::kMax:
    case SizeExprKind::kFloorDiv:
    case SizeExprKind::kMod:
      return 2;
    case SizeExprKind::kMaxOverRange:
      return 3;
    case SizeExprKind::kFieldLoad:
    case SizeExprKind::kNdarrayRead:
      return -1;
  }
  return 0;
}

constexpr int kLastKind = static_cast<int>(SizeExprKind::kMod);

uint64_t Mix(uint64_t h, uint64_t v) {
  // FNV-1a over the 8 bytes of v.
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string Binary(const SizeExpr& e, absl::string_view op) {
  return absl::StrCat("(", e.children()[0]->ToString(), " ", op, " ",
                      e.children()[1]->ToString(), ")");
}

std::string IndexList(const SizeExpr& e) {
  return absl::StrJoin(e.children(), ", ",
                       [](std::string* out, const SizeExpr::Ptr& c) {
                         out->append(c->ToString());
                       });
}

}  // namespace

std::shared_ptr<SizeExpr> SizeExpr::Make(SizeExprKind kind,
                                         std::vector<Ptr> children) {
  for (const Ptr& child : children)
    assert(child != nullptr);
  return std::make_shared<SizeExpr>(Key(), kind, std::move(children));
}

SizeExpr::Ptr SizeExpr::Const(int64_t value) {
  auto e = Make(SizeExprKind::kConst);
  e->value_ = value;
  return e;
}

SizeExpr::Ptr SizeExpr::BoundVar(int var_id) {
  auto e = Make(SizeExprKind::kBoundVar);
  e->var_id_ = var_id;
  return e;
}

SizeExpr::Ptr SizeExpr::FieldLoad(int snode_id, std::vector<Ptr> indices) {
  auto e = Make(SizeExprKind::kFieldLoad, std::move(indices));
  e->snode_id_ = snode_id;
  return e;
}

SizeExpr::Ptr SizeExpr::NdarrayShape(int arg, int axis) {
  auto e = Make(SizeExprKind::kNdarrayShape);
  e->arg_ = arg;
  e->axis_ = axis;
  return e;
}

SizeExpr::Ptr SizeExpr::NdarrayRead(int arg, std::vector<Ptr> indices) {
  auto e = Make(SizeExprKind::kNdarrayRead, std::move(indices));
  e->arg_ = arg;
  return e;
}

SizeExpr::Ptr SizeExpr::LoopIndexMax(Ptr loop_end) {
  return Make(SizeExprKind::kLoopIndexMax, {std::move(loop_end)});
}

SizeExpr::Ptr SizeExpr::StackLoadTopMax(Ptr pushed_max) {
  return Make(SizeExprKind::kStackLoadTopMax, {std::move(pushed_max)});
}

SizeExpr::Ptr SizeExpr::Add(Ptr a, Ptr b) {
  return Make(SizeExprKind::kAdd, {std::move(a), std::move(b)});
}
SizeExpr::Ptr SizeExpr::Sub(Ptr a, Ptr b) {
  return Make(SizeExprKind::kSub, {std::move(a), std::move(b)});
}
SizeExpr::Ptr SizeExpr::Mul(Ptr a, Ptr b) {
  return Make(SizeExprKind::kMul, {std::move(a), std::move(b)});
}
SizeExpr::Ptr SizeExpr::Max(Ptr a, Ptr b) {
  return Make(SizeExprKind::kMax, {std::move(a), std::move(b)});
}

SizeExpr::Ptr SizeExpr::FloorDiv(Ptr a, Ptr b) {
  return Make(SizeExprKind::kFloorDiv, {std::move(a), std::move(b)});
}
SizeExpr::Ptr SizeExpr::Mod(Ptr a, Ptr b) {
  return Make(SizeExprKind::kMod, {std::move(a), std::move(b)});
}

SizeExpr::Ptr SizeExpr::ArgValue(int arg) {
  auto e = Make(SizeExprKind::kArgValue);
  e->arg_ = arg;
  return e;
}

SizeExpr::Ptr SizeExpr::MaxOverRange(int var_id, Ptr begin, Ptr end, Ptr body) {
  auto e = Make(SizeExprKind::kMaxOverRange,
                {std::move(begin), std::move(end), std::move(body)});
  e->var_id_ = var_id;
  return e;
}

std::string SizeExpr::ToString() const {
  switch (kind_) {
    case SizeExprKind::kConst:
      return absl::StrCat(value_);
    case SizeExprKind::kBoundVar:
      return absl::StrCat("v", var_id_);
    case SizeExprKind::kFieldLoad:
      return absl::StrCat("field(snode", snode_id_, ")[", IndexList(*this),
                          "]");
    case SizeExprKind::kNdarrayShape:
      return absl::StrCat("shape(arg", arg_, ", ", axis_, ")");
    case SizeExprKind::kNdarrayRead:
      return absl::StrCat("read(arg", arg_, ")[", IndexList(*this), "]");
    case SizeExprKind::kLoopIndexMax:
      return absl::StrCat("loop_index_max(", children_[0]->ToString(), ")");
    case SizeExprKind::kStackLoadTopMax:
      return absl::StrCat("stack_top_max(", children_[0]->ToString(), ")");
    case SizeExprKind::kAdd:
      return Binary(*this, "+");
    case SizeExprKind::kSub:
      return Binary(*this, "-");
    case SizeExprKind::kMul:
      return Binary(*this, "*");
    case SizeExprKind::kMax:
      return absl::StrCat("max(", children_[0]->ToString(), ", ",
                          children_[1]->ToString(), ")");
    case SizeExprKind::kArgValue:
      return absl::StrCat("arg", arg_);
    case SizeExprKind::kFloorDiv:
      return Binary(*this, "//");
    case SizeExprKind::kMod:
      return Binary(*this, "%");
    case SizeExprKind::kMaxOverRange:
      return absl::StrCat(
          "max_over_range(v", var_id_, " in [", children_[0]->ToString(), ", ",
          children_[1]->ToString(), "), ", children_[2]->ToString(), ")");
  }
  return "?";
}

bool SizeExpr::Equals(const SizeExpr& other) const {
  if (kind_ != other.kind_ || value_ != other.value_ ||
      var_id_ != other.var_id_ || snode_id_ != other.snode_id_ ||
      arg_ != other.arg_ || axis_ != other.axis_ ||
      children_.size() != other.children_.size()) {
    return false;
  }
  for (size_t i = 0; i < children_.size(); ++i) {
    if (!children_[i]->Equals(*other.children_[i]))
      return false;
  }
  return true;
}

uint64_t SizeExpr::Hash() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = Mix(h, static_cast<uint64_t>(kind_));
  h = Mix(h, static_cast<uint64_t>(value_));
  h = Mix(h, static_cast<uint64_t>(var_id_));
  h = Mix(h, static_cast<uint64_t>(snode_id_));
  h = Mix(h, static_cast<uint64_t>(arg_));
  h = Mix(h, static_cast<uint64_t>(axis_));
  h = Mix(h, children_.size());
  for (const Ptr& child : children_)
    h = Mix(h, child->Hash());
  return h;
}

bool operator==(const FlatSizeExprNode& a, const FlatSizeExprNode& b) {
  return a.kind == b.kind && a.value == b.value && a.var_id == b.var_id &&
         a.snode_id == b.snode_id && a.arg == b.arg && a.axis == b.axis &&
         a.children == b.children;
}

std::vector<FlatSizeExprNode> Flatten(const SizeExpr& expr) {
  std::vector<FlatSizeExprNode> nodes;
  // Shared subtrees are emitted once and referenced by index.
  absl::flat_hash_map<const SizeExpr*, int> emitted;
  std::function<int(const SizeExpr&)> visit = [&](const SizeExpr& e) -> int {
    auto it = emitted.find(&e);
    if (it != emitted.end())
      return it->second;
    FlatSizeExprNode node;
    node.kind = e.kind();
    node.value = e.value();
    node.var_id = e.var_id();
    node.snode_id = e.snode_id();
    node.arg = e.arg();
    node.axis = e.axis();
    for (const SizeExpr::Ptr& child : e.children()) {
      node.children.push_back(visit(*child));
    }
    nodes.push_back(std::move(node));
    int index = static_cast<int>(nodes.size()) - 1;
    emitted[&e] = index;
    return index;
  };
  visit(expr);
  return nodes;
}

absl::StatusOr<SizeExpr::Ptr> Unflatten(
    const std::vector<FlatSizeExprNode>& nodes) {
  auto bad = [](size_t index, absl::string_view why) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("malformed serialized SizeExpr: node ", index, " ", why));
  };
  if (nodes.empty())
    return bad(0, "missing (empty node list)");
  constexpr int64_t kMaxExpandedNodes = int64_t{1} << 20;
  std::vector<SizeExpr::Ptr> built;
  std::vector<int64_t> expanded(nodes.size(), 1);
  std::vector<bool> referenced(nodes.size(), false);
  built.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const FlatSizeExprNode& n = nodes[i];
    const int kind = static_cast<int>(n.kind);
    if (kind < 0 || kind > kLastKind) {
      return bad(i, absl::StrCat("has unknown kind ", kind));
    }
    const int arity = Arity(n.kind);
    if (arity >= 0 && static_cast<int>(n.children.size()) != arity) {
      return bad(i, absl::StrCat("has ", n.children.size(),
                                 " children, expected ", arity));
    }
    std::vector<SizeExpr::Ptr> children;
    for (int child : n.children) {
      if (child < 0 || static_cast<size_t>(child) >= i) {
        return bad(i, absl::StrCat("refers to node ", child,
                                   ", which does not precede it"));
      }
      children.push_back(built[child]);
      referenced[child] = true;
      expanded[i] =
          std::min(kMaxExpandedNodes + 1, expanded[i] + expanded[child]);
    }
    if (expanded[i] > kMaxExpandedNodes) {
      return bad(i, "expands to more than 2^20 nodes");
    }
    switch (n.kind) {
      case SizeExprKind::kConst:
        built.push_back(SizeExpr::Const(n.value));
        break;
      case SizeExprKind::kBoundVar:
        built.push_back(SizeExpr::BoundVar(n.var_id));
        break;
      case SizeExprKind::kFieldLoad:
        built.push_back(SizeExpr::FieldLoad(n.snode_id, std::move(children)));
        break;
      case SizeExprKind::kNdarrayShape:
        built.push_back(SizeExpr::NdarrayShape(n.arg, n.axis));
        break;
      case SizeExprKind::kNdarrayRead:
        built.push_back(SizeExpr::NdarrayRead(n.arg, std::move(children)));
        break;
      case SizeExprKind::kLoopIndexMax:
        built.push_back(SizeExpr::LoopIndexMax(children[0]));
        break;
      case SizeExprKind::kStackLoadTopMax:
        built.push_back(SizeExpr::StackLoadTopMax(children[0]));
        break;
      case SizeExprKind::kAdd:
        built.push_back(SizeExpr::Add(children[0], children[1]));
        break;
      case SizeExprKind::kSub:
        built.push_back(SizeExpr::Sub(children[0], children[1]));
        break;
      case SizeExprKind::kMul:
        built.push_back(SizeExpr::Mul(children[0], children[1]));
        break;
      case SizeExprKind::kMax:
        built.push_back(SizeExpr::Max(children[0], children[1]));
        break;
      case SizeExprKind::kMaxOverRange:
        built.push_back(SizeExpr::MaxOverRange(n.var_id, children[0],
                                               children[1], children[2]));
        break;
      case SizeExprKind::kArgValue:
        built.push_back(SizeExpr::ArgValue(n.arg));
        break;
      case SizeExprKind::kFloorDiv:
        built.push_back(SizeExpr::FloorDiv(children[0], children[1]));
        break;
      case SizeExprKind::kMod:
        built.push_back(SizeExpr::Mod(children[0], children[1]));
        break;
    }
  }
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    if (!referenced[i])
      return bad(i, "is not reachable from the root");
  }
  return built.back();
}

std::string SerializeSizeExpr(const SizeExpr& expr) {
  proto::SizeExpr message;
  for (const FlatSizeExprNode& node : Flatten(expr)) {
    proto::SizeExprNode* out = message.add_nodes();
    out->set_kind(static_cast<int>(node.kind));
    out->set_value(node.value);
    out->set_var_id(node.var_id);
    out->set_snode_id(node.snode_id);
    out->set_arg(node.arg);
    out->set_axis(node.axis);
    for (int child : node.children)
      out->add_children(child);
  }
  return message.SerializeAsString();
}

absl::StatusOr<SizeExpr::Ptr> DeserializeSizeExpr(const std::string& bytes) {
  proto::SizeExpr message;
  if (!message.ParseFromString(bytes)) {
    return MakeError(ErrorKind::kRuntime,
                     "malformed serialized SizeExpr: not a valid message");
  }
  std::vector<FlatSizeExprNode> nodes;
  for (const proto::SizeExprNode& in : message.nodes()) {
    FlatSizeExprNode node;
    node.kind = static_cast<SizeExprKind>(in.kind());
    node.value = in.value();
    node.var_id = in.var_id();
    node.snode_id = in.snode_id();
    node.arg = in.arg();
    node.axis = in.axis();
    node.children.assign(in.children().begin(), in.children().end());
    nodes.push_back(std::move(node));
  }
  return Unflatten(nodes);
}

}  // namespace quadrants::ir
