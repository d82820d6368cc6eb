#include "quadrants/runtime/adstack/gate_count.h"

#include <algorithm>
#include <cstring>

#include "quadrants/common/status_macros.h"

namespace quadrants::adstack {
namespace {

// Copies above this many bytes go in pieces, so counting a large array
// never holds a second copy of it on the host.
constexpr int64_t kChunkBytes = int64_t{16} << 20;

template <typename T>
T Load(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

bool Passes(const ir::AdStackGate& gate, const char* p) {
  switch (gate.dtype) {
    case ir::PrimitiveType::kF32:
      return gate.Passes(Load<float>(p));
    case ir::PrimitiveType::kF64:
      return gate.Passes(Load<double>(p));
    case ir::PrimitiveType::kI8:
      return gate.PassesInt(Load<int8_t>(p));
    case ir::PrimitiveType::kI16:
      return gate.PassesInt(Load<int16_t>(p));
    case ir::PrimitiveType::kI32:
      return gate.PassesInt(Load<int32_t>(p));
    case ir::PrimitiveType::kI64:
      return gate.PassesInt(Load<int64_t>(p));
    case ir::PrimitiveType::kU1:
    case ir::PrimitiveType::kU8:
      return gate.PassesInt(Load<uint8_t>(p));
    case ir::PrimitiveType::kU16:
      return gate.PassesInt(Load<uint16_t>(p));
    case ir::PrimitiveType::kU32:
      return gate.PassesInt(Load<uint32_t>(p));
    case ir::PrimitiveType::kU64:
      return gate.PassesInt(static_cast<int64_t>(Load<uint64_t>(p)));
    default:
      return true;  // f16: every element counts, an upper bound
  }
}

// Calls fn(byte offset) for every element of `array` the gate can reach,
// innermost axis fastest.
template <typename Fn>
void ForEachElement(const GateArray& array, Fn&& fn) {
  const size_t n = array.extents.size();
  std::vector<int64_t> lo(n), hi(n), index(n);
  for (size_t a = 0; a < n; ++a) {
    if (array.fixed[a] >= 0) {
      lo[a] = array.fixed[a];
      hi[a] = array.fixed[a] + 1;
    } else {
      lo[a] = 0;
      hi[a] = array.moduli[a] > 0
                  ? std::min(array.extents[a], array.moduli[a])
                  : array.extents[a];
    }
    if (lo[a] >= hi[a] || lo[a] < 0 || hi[a] > array.extents[a])
      return;
    index[a] = lo[a];
  }
  while (true) {
    int64_t offset = 0;
    for (size_t a = 0; a < n; ++a)
      offset += index[a] * array.byte_strides[a];
    fn(offset);
    size_t a = n;
    while (a > 0) {
      --a;
      if (++index[a] < hi[a])
        break;
      index[a] = lo[a];
      if (a == 0)
        return;
    }
    if (n == 0)
      return;
  }
}

}  // namespace

absl::StatusOr<int64_t> CountGatePasses(const ir::AdStackGate& gate,
                                        const GateArray& array,
                                        ArrayMemory* memory) {
  int64_t first = -1, last = -1;
  ForEachElement(array, [&](int64_t offset) {
    if (first < 0 || offset < first)
      first = offset;
    last = std::max(last, offset);
  });
  if (first < 0)
    return 0;
  const int64_t element = std::max(1, ir::BitWidth(array.dtype) / 8);
  const int64_t span = last + element - first;
  int64_t passing = 0;
  if (memory == nullptr || memory->host_addressable()) {
    ForEachElement(array, [&](int64_t offset) {
      passing += Passes(gate, array.base + offset);
    });
    return passing;
  }
  // The span copied in chunks; elements are visited in increasing offset
  // order within each chunk's window.
  std::vector<char> chunk(static_cast<size_t>(std::min(span, kChunkBytes)));
  int64_t chunk_begin = -1;
  absl::Status status;
  ForEachElement(array, [&](int64_t offset) {
    if (!status.ok())
      return;
    if (chunk_begin < 0 || offset < chunk_begin ||
        offset + element > chunk_begin + static_cast<int64_t>(chunk.size())) {
      chunk_begin = offset;
      const int64_t bytes = std::min<int64_t>(chunk.size(), first + span - offset);
      status = memory->CopyToHost(chunk.data(), array.base + offset, bytes);
    }
    passing += Passes(gate, chunk.data() + (offset - chunk_begin));
  });
  QD_RETURN_IF_ERROR(status);
  return passing;
}

}  // namespace quadrants::adstack
