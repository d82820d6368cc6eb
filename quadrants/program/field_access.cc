#include "quadrants/program/field_access.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "quadrants/common/status_macros.h"

namespace quadrants {
namespace {

// The least a thread of a parallel copy moves: below twice this a copy
// stays on the calling thread.
constexpr int64_t kParallelBytes = int64_t{2} << 20;
// Host bytes of one tile of a strided copy: small enough to stay in L1/L2.
constexpr int64_t kTileBytes = int64_t{16} << 10;

// Runs body(begin, end) over [0, n) split among the host's cores, each
// thread moving at least kParallelBytes of the copy's `bytes`.
template <typename Body>
void ParallelRanges(int64_t n, int64_t bytes, const Body& body) {
  const int64_t threads = std::min<int64_t>(
      {std::max(1u, std::thread::hardware_concurrency()),
       std::max<int64_t>(1, bytes / kParallelBytes), n});
  if (threads <= 1) {
    body(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> workers;
  for (int64_t t = 1; t < threads; ++t) {
    workers.emplace_back(
        [&, t] { body(n * t / threads, n * (t + 1) / threads); });
  }
  body(int64_t{0}, n / threads);
  for (std::thread& worker : workers)
    worker.join();
}

// Copies `n` elements of T from `src` (stride `src_step` bytes) to `dst`
// (stride `dst_step` bytes).
template <typename T>
void StridedCopy(char* dst, int64_t dst_step, const char* src,
                 int64_t src_step, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, src + i * src_step, sizeof(T));
    std::memcpy(dst + i * dst_step, &value, sizeof(T));
  }
}

void StridedCopy(int64_t bytes, char* dst, int64_t dst_step, const char* src,
                 int64_t src_step, int64_t n) {
  switch (bytes) {
    case 1:
      return StridedCopy<uint8_t>(dst, dst_step, src, src_step, n);
    case 2:
      return StridedCopy<uint16_t>(dst, dst_step, src, src_step, n);
    case 4:
      return StridedCopy<uint32_t>(dst, dst_step, src, src_step, n);
    case 8:
      return StridedCopy<uint64_t>(dst, dst_step, src, src_step, n);
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * dst_step, src + i * src_step, bytes);
  }
}

}  // namespace

PlaceAccess::PlaceAccess(ArrayMemory& memory, char* root,
                         std::vector<ir::PlaceLayout> components,
                         int64_t element_bytes)
    : memory_(memory),
      components_(std::move(components)),
      element_bytes_(element_bytes) {
  for (int64_t extent : components_.front().shape)
    count_ *= extent;
  first_ = components_.front().offset;
  for (const ir::PlaceLayout& c : components_) {
    affine_ = affine_ && c.affine();
    first_ = std::min(first_, c.offset);
  }
  begin_ = root + first_;
  const int64_t n = static_cast<int64_t>(components_.size());
  int64_t last = first_;
  for (size_t k = 0; k < components_.size(); ++k) {
    const ir::PlaceLayout& c = components_[k];
    if (count_ > 0) {
      std::vector<int64_t> back(c.shape.size());
      for (size_t a = 0; a < back.size(); ++a)
        back[a] = c.shape[a] - 1;
      last = std::max(last, c.ByteOffset(back));
    }
    // Packed: component k right after component k - 1, and each axis
    // stepping over whole host rows. A permuted order (field order=) or
    // another place between elements breaks it.
    packed_ = packed_ && c.affine() &&
              c.offset == first_ + static_cast<int64_t>(k) * element_bytes_;
    int64_t stride = n * element_bytes_;
    for (int axis = static_cast<int>(c.shape.size()) - 1; axis >= 0; --axis) {
      if (c.shape[axis] > 1 && c.axis_stride[axis] != stride)
        packed_ = false;
      stride *= c.shape[axis];
    }
  }
  span_ = count_ == 0 ? 0 : last - first_ + element_bytes_;
  packed_ = packed_ && span_ == count_ * n * element_bytes_;
}

void PlaceAccess::Gather(Direction direction, char* span, char* host) const {
  const int64_t n = static_cast<int64_t>(components_.size());
  const int64_t row = n * element_bytes_;  // host bytes per element
  const bool to_host = direction == Direction::kToHost;
  const std::vector<int64_t>& shape = components_.front().shape;
  const int axes = static_cast<int>(shape.size());
  if (!affine_) {
    // Blocked layouts: each element's address from its digits.
    std::vector<int64_t> index(axes);
    for (int64_t i = 0; i < count_; ++i) {
      int64_t linear = i;
      for (int axis = axes - 1; axis >= 0; --axis) {
        index[axis] = linear % shape[axis];
        linear /= shape[axis];
      }
      for (int64_t k = 0; k < n; ++k) {
        char* h = host + i * row + k * element_bytes_;
        char* at = span + components_[k].ByteOffset(index) - first_;
        if (to_host)
          std::memcpy(h, at, element_bytes_);
        else
          std::memcpy(at, h, element_bytes_);
      }
    }
    return;
  }
  // Tiles of the last axis, each copied component by component: a tile's
  // host rows stay in cache while every component lands in them.
  const int64_t inner = axes == 0 ? 1 : shape[axes - 1];
  const int64_t outer = inner == 0 ? 0 : count_ / inner;
  const int64_t tile = std::max<int64_t>(1, kTileBytes / row);
  const int64_t tiles_per_row = (inner + tile - 1) / tile;
  ParallelRanges(outer * tiles_per_row, count_ * row,
                 [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / tiles_per_row;
      const int64_t first = (t % tiles_per_row) * tile;
      const int64_t length = std::min(tile, inner - first);
      for (int64_t k = 0; k < n; ++k) {
        const ir::PlaceLayout& c = components_[k];
        const int64_t step = axes == 0 ? 0 : c.axis_stride[axes - 1];
        int64_t at = c.offset - first_ + first * step;
        int64_t linear = o;
        for (int axis = axes - 2; axis >= 0; --axis) {
          at += (linear % shape[axis]) * c.axis_stride[axis];
          linear /= shape[axis];
        }
        char* h = host + (o * inner + first) * row + k * element_bytes_;
        if (to_host)
          StridedCopy(element_bytes_, h, row, span + at, step, length);
        else
          StridedCopy(element_bytes_, span + at, step, h, row, length);
      }
    }
  });
}

absl::Status PlaceAccess::Read(void* out) const {
  char* host = static_cast<char*>(out);
  if (packed_)
    return memory_.CopyToHost(host, begin_, span_);
  if (memory_.host_addressable()) {
    QD_RETURN_IF_ERROR(memory_.WaitForQueuedWork());
    Gather(Direction::kToHost, begin_, host);
    return absl::OkStatus();
  }
  std::vector<char> span(static_cast<size_t>(span_));
  QD_RETURN_IF_ERROR(memory_.CopyToHost(span.data(), begin_, span_));
  Gather(Direction::kToHost, span.data(), host);
  return absl::OkStatus();
}

absl::Status PlaceAccess::Write(const void* in) const {
  char* host = const_cast<char*>(static_cast<const char*>(in));
  if (packed_)
    return memory_.CopyFromHost(begin_, host, span_);
  if (memory_.host_addressable()) {
    QD_RETURN_IF_ERROR(memory_.WaitForQueuedWork());
    Gather(Direction::kFromHost, begin_, host);
    return absl::OkStatus();
  }
  // The other places' bytes in the span are written back as they are.
  std::vector<char> span(static_cast<size_t>(span_));
  QD_RETURN_IF_ERROR(memory_.CopyToHost(span.data(), begin_, span_));
  Gather(Direction::kFromHost, span.data(), host);
  return memory_.CopyFromHost(begin_, span.data(), span_);
}

absl::Status PlaceAccess::Fill(const void* element) const {
  const int64_t n = static_cast<int64_t>(components_.size());
  std::vector<char> values(static_cast<size_t>(count_ * n * element_bytes_));
  for (int64_t i = 0; i < count_ * n; ++i)
    std::memcpy(values.data() + i * element_bytes_, element, element_bytes_);
  return Write(values.data());
}

}  // namespace quadrants
