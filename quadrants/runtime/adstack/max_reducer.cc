#include "quadrants/runtime/adstack/max_reducer.h"

#include <algorithm>
#include <cstring>

#include "quadrants/runtime/adstack/size_expr_evaluator.h"

namespace quadrants::adstack {
namespace {

// Lanes per block: the values of a block stay in L1 cache.
constexpr int64_t kLanes = 512;

int64_t Wrap(uint64_t v) {
  return static_cast<int64_t>(v);
}

// The serial evaluator's semantics: max ignores a missing value, the other
// operators propagate it.
int64_t Apply(BodyOp op, int64_t a, int64_t b) {
  if (op == BodyOp::kMax)
    return std::max(a, b);
  if (a == kNoValue || b == kNoValue)
    return kNoValue;
  switch (op) {
    case BodyOp::kAdd:
      return Wrap(uint64_t(a) + uint64_t(b));
    case BodyOp::kSub:
      return Wrap(uint64_t(a) - uint64_t(b));
    default:
      return Wrap(uint64_t(a) * uint64_t(b));
  }
}

template <typename T>
void GatherTyped(const char* p, int64_t stride, int64_t n, int64_t* out) {
  if (stride == static_cast<int64_t>(sizeof(T))) {
    const T* t = reinterpret_cast<const T*>(p);
    for (int64_t l = 0; l < n; ++l)
      out[l] = t[l];
    return;
  }
  for (int64_t l = 0; l < n; ++l) {
    T v;
    std::memcpy(&v, p + l * stride, sizeof(T));
    out[l] = v;
  }
}

void Gather(ir::PrimitiveType type, const char* p, int64_t stride, int64_t n,
            int64_t* out) {
  switch (type) {
    case ir::PrimitiveType::kI8:
      return GatherTyped<int8_t>(p, stride, n, out);
    case ir::PrimitiveType::kI16:
      return GatherTyped<int16_t>(p, stride, n, out);
    case ir::PrimitiveType::kI32:
      return GatherTyped<int32_t>(p, stride, n, out);
    case ir::PrimitiveType::kU8:
      return GatherTyped<uint8_t>(p, stride, n, out);
    case ir::PrimitiveType::kU16:
      return GatherTyped<uint16_t>(p, stride, n, out);
    case ir::PrimitiveType::kU32:
      return GatherTyped<uint32_t>(p, stride, n, out);
    default:
      for (int64_t l = 0; l < n; ++l)
        out[l] = ReadAsInteger(p + l * stride, type);
  }
}

// The largest of n >= 1 elements; contiguous runs vectorize.
template <typename T>
int64_t MaxTyped(const char* p, int64_t stride, int64_t n) {
  T best = std::numeric_limits<T>::min();
  if (stride == static_cast<int64_t>(sizeof(T))) {
    const T* t = reinterpret_cast<const T*>(p);
    for (int64_t l = 0; l < n; ++l)
      best = std::max(best, t[l]);
    return best;
  }
  for (int64_t l = 0; l < n; ++l) {
    T v;
    std::memcpy(&v, p + l * stride, sizeof(T));
    best = std::max(best, v);
  }
  return best;
}

int64_t MaxOf(ir::PrimitiveType type, const char* p, int64_t stride,
              int64_t n) {
  switch (type) {
    case ir::PrimitiveType::kI8:
      return MaxTyped<int8_t>(p, stride, n);
    case ir::PrimitiveType::kI16:
      return MaxTyped<int16_t>(p, stride, n);
    case ir::PrimitiveType::kI32:
      return MaxTyped<int32_t>(p, stride, n);
    case ir::PrimitiveType::kU8:
      return MaxTyped<uint8_t>(p, stride, n);
    case ir::PrimitiveType::kU16:
      return MaxTyped<uint16_t>(p, stride, n);
    case ir::PrimitiveType::kU32:
      return MaxTyped<uint32_t>(p, stride, n);
    default: {
      int64_t best = kNoValue;
      for (int64_t l = 0; l < n; ++l)
        best = std::max(best, ReadAsInteger(p + l * stride, type));
      return best;
    }
  }
}

// Where a read lands for the lanes [0, len) of a segment whose innermost
// coordinate starts at `start`: lanes [lo, hi) are in range, at
// `offset + l * stride` bytes from the base.
struct ReadWindow {
  bool none = false;    // no lane is in range
  bool varies = false;  // some index is the innermost axis
  int64_t offset = 0;
  int64_t stride = 0;
  int64_t lo = 0;
  int64_t hi = 0;
};

ReadWindow Window(const BodyRead& read, const ResolvedRead& where,
                  int inner_axis, const int64_t* coords, int64_t start,
                  int64_t len) {
  ReadWindow w;
  w.hi = len;
  if (where.base == nullptr || read.indices.size() != where.extents.size()) {
    w.none = true;
    return w;
  }
  for (size_t d = 0; d < read.indices.size(); ++d) {
    const ReadIndex& index = read.indices[d];
    const int64_t extent = where.extents[d];
    if (index.is_axis && index.value == inner_axis) {
      w.varies = true;
      w.lo = std::max(w.lo, -start);
      w.hi = std::min(w.hi, extent - start);
      w.offset += start * where.byte_strides[d];
      w.stride += where.byte_strides[d];
      continue;
    }
    const int64_t v = index.is_axis ? coords[index.value] : index.value;
    if (v < 0 || v >= extent) {
      w.none = true;
      return w;
    }
    w.offset += v * where.byte_strides[d];
  }
  if (w.hi <= w.lo)
    w.none = true;
  return w;
}

bool IsConst(const std::vector<BodyInstr>& code, int k) {
  return code[k].op == BodyOp::kConst;
}

}  // namespace

std::vector<BodyInstr> FoldConstants(const std::vector<BodyInstr>& code) {
  // Operators of constants become constants, so that `read + 1 - 0` has a
  // single constant operand per operator.
  std::vector<BodyInstr> out = code;
  for (BodyInstr& in : out) {
    if (in.op == BodyOp::kAdd || in.op == BodyOp::kSub ||
        in.op == BodyOp::kMul || in.op == BodyOp::kMax) {
      if (IsConst(out, in.a) && IsConst(out, in.b)) {
        in = {BodyOp::kConst, -1, -1,
              Apply(in.op, out[in.a].value, out[in.b].value)};
      }
    }
  }
  return out;
}

std::optional<MonotoneRead> FindMonotoneRead(
    const ReducerJob& job, const std::vector<BodyInstr>& code) {
  // A root that only adds, subtracts or multiplies a non-negative constant,
  // or takes a max with one, is monotone in its single read: its maximum is
  // that function of the read's maximum.
  const int inner = static_cast<int>(job.begin.size()) - 1;
  int k = static_cast<int>(code.size()) - 1;
  std::vector<BodyInstr> chain;
  while (k >= 0) {
    const BodyInstr& in = code[k];
    if (in.op == BodyOp::kRead) {
      const BodyRead& read = job.reads[in.a];
      bool varies = false;
      for (const ReadIndex& index : read.indices)
        varies |= index.is_axis && index.value == inner;
      if (!varies)
        return std::nullopt;
      return MonotoneRead{in.a, {chain.rbegin(), chain.rend()}};
    }
    const bool commutes =
        in.op == BodyOp::kAdd || in.op == BodyOp::kMax || in.op == BodyOp::kMul;
    int other = -1;
    int64_t c = 0;
    if ((in.op == BodyOp::kAdd || in.op == BodyOp::kSub ||
         in.op == BodyOp::kMul || in.op == BodyOp::kMax) &&
        IsConst(code, in.b)) {
      other = in.a;
      c = code[in.b].value;
    } else if (commutes && IsConst(code, in.a)) {
      other = in.b;
      c = code[in.a].value;
    }
    if (other < 0 || (in.op == BodyOp::kMul && c < 0))
      return std::nullopt;
    chain.push_back({in.op, -1, -1, c});
    k = other;
  }
  return std::nullopt;
}

int64_t MonotoneRead::Apply(int64_t read_max) const {
  for (const BodyInstr& step : chain)
    read_max = adstack::Apply(step.op, read_max, step.value);
  return read_max;
}

BodyInterpreter::BodyInterpreter(const ReducerJob& job)
    : job_(job), code_(FoldConstants(job.code)) {
  for (size_t a = 0; a < job.begin.size(); ++a)
    counts_.push_back(std::max<int64_t>(0, job.end[a] - job.begin[a]));
  if (std::optional<MonotoneRead> fast = FindMonotoneRead(job, code_)) {
    fast_read_ = fast->read;
    fast_chain_ = std::move(fast->chain);
  }
  if (fast_read_ < 0) {
    lanes_.resize(code_.size() * kLanes);
    values_.resize(code_.size());
  }
}

void BodyInterpreter::Read(int r, const int64_t* coords, int64_t start,
                           int64_t len, Value* out) {
  const BodyRead& read = job_.reads[r];
  const ResolvedRead& where = job_.resolved[r];
  const ReadWindow w = Window(read, where, static_cast<int>(counts_.size()) - 1,
                              coords, start, len);
  if (w.none) {
    out->uniform = true;
    out->may_none = true;
    out->scalar = kNoValue;
    return;
  }
  if (!w.varies) {
    out->uniform = true;
    out->may_none = false;
    out->scalar = ReadAsInteger(where.base + w.offset, where.dtype);
    return;
  }
  out->uniform = false;
  out->may_none = w.lo > 0 || w.hi < len;
  std::fill(out->lanes, out->lanes + w.lo, kNoValue);
  std::fill(out->lanes + w.hi, out->lanes + len, kNoValue);
  Gather(where.dtype, where.base + w.offset + w.lo * w.stride, w.stride,
         w.hi - w.lo, out->lanes + w.lo);
}

int64_t BodyInterpreter::FastSegment(const int64_t* coords, int64_t start,
                                     int64_t len) {
  const ResolvedRead& where = job_.resolved[fast_read_];
  const ReadWindow w =
      Window(job_.reads[fast_read_], where,
             static_cast<int>(counts_.size()) - 1, coords, start, len);
  int64_t m = w.none
                  ? kNoValue
                  : MaxOf(where.dtype, where.base + w.offset + w.lo * w.stride,
                          w.stride, w.hi - w.lo);
  for (const BodyInstr& step : fast_chain_)
    m = adstack::Apply(step.op, m, step.value);
  return m;
}

int64_t BodyInterpreter::Segment(const int64_t* coords, int64_t start,
                                 int64_t len) {
  const int inner = static_cast<int>(counts_.size()) - 1;
  for (size_t k = 0; k < code_.size(); ++k) {
    const BodyInstr& in = code_[k];
    Value& out = values_[k];
    out.lanes = lanes_.data() + k * kLanes;
    switch (in.op) {
      case BodyOp::kConst:
      case BodyOp::kShape:
      case BodyOp::kArg:
        out = {true, in.value == kNoValue, in.value, out.lanes};
        break;
      case BodyOp::kAxis:
        if (in.a == inner) {
          out.uniform = false;
          out.may_none = false;
          for (int64_t l = 0; l < len; ++l)
            out.lanes[l] = start + l;
        } else {
          out = {true, false, coords[in.a], out.lanes};
        }
        break;
      case BodyOp::kRead:
        Read(in.a, coords, start, len, &out);
        break;
      default: {
        const Value& a = values_[in.a];
        const Value& b = values_[in.b];
        if (a.uniform && b.uniform) {
          out = {true, false, Apply(in.op, a.scalar, b.scalar), out.lanes};
          out.may_none = out.scalar == kNoValue;
          break;
        }
        // Spread a uniform operand over its own lanes (its slot is free).
        for (const Value* v : {&a, &b}) {
          if (v->uniform)
            std::fill(v->lanes, v->lanes + len, v->scalar);
        }
        const int64_t* x = a.lanes;
        const int64_t* y = b.lanes;
        int64_t* o = out.lanes;
        out.uniform = false;
        out.may_none = a.may_none || b.may_none;
        if (in.op == BodyOp::kMax) {
          for (int64_t l = 0; l < len; ++l)
            o[l] = std::max(x[l], y[l]);
          out.may_none = a.may_none && b.may_none;
        } else if (out.may_none) {
          for (int64_t l = 0; l < len; ++l)
            o[l] = Apply(in.op, x[l], y[l]);
        } else if (in.op == BodyOp::kAdd) {
          for (int64_t l = 0; l < len; ++l)
            o[l] = Wrap(uint64_t(x[l]) + uint64_t(y[l]));
        } else if (in.op == BodyOp::kSub) {
          for (int64_t l = 0; l < len; ++l)
            o[l] = Wrap(uint64_t(x[l]) - uint64_t(y[l]));
        } else {
          for (int64_t l = 0; l < len; ++l)
            o[l] = Wrap(uint64_t(x[l]) * uint64_t(y[l]));
        }
      }
    }
  }
  const Value& root = values_.back();
  if (root.uniform)
    return root.scalar;
  int64_t best = kNoValue;
  for (int64_t l = 0; l < len; ++l)
    best = std::max(best, root.lanes[l]);
  return best;
}

int64_t BodyInterpreter::Reduce(int64_t lo, int64_t hi) {
  int64_t best = kNoValue;
  if (counts_.empty() || code_.empty())
    return best;
  const int64_t inner = counts_.back();
  if (inner == 0)
    return best;
  const int outer = static_cast<int>(counts_.size()) - 1;
  std::vector<int64_t> coords(counts_.size(), 0);
  for (int64_t at = lo; at < hi;) {
    int64_t row = at / inner;
    const int64_t col = at % inner;
    for (int a = outer - 1; a >= 0; --a) {
      coords[a] = job_.begin[a] + row % counts_[a];
      row /= counts_[a];
    }
    int64_t len = std::min(inner - col, hi - at);
    if (fast_read_ < 0)
      len = std::min(len, kLanes);
    const int64_t start = job_.begin[outer] + col;
    best =
        std::max(best, fast_read_ >= 0 ? FastSegment(coords.data(), start, len)
                                       : Segment(coords.data(), start, len));
    at += len;
  }
  return best;
}

}  // namespace quadrants::adstack
