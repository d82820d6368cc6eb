#include "quadrants/common/stable_hash.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace quadrants {
namespace {

constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;

// SplitMix64's finalizer: every input bit reaches every output bit.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t StableHash64(absl::string_view bytes, uint64_t seed) {
  uint64_t h = Mix(seed ^ (bytes.size() * kMul));
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ Mix(word + i)) * kMul;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  return Mix(h ^ Mix(tail ^ (bytes.size() - i)));
}

std::string StableHash128Hex(absl::string_view bytes) {
  return absl::StrFormat("%016x%016x", StableHash64(bytes, 1),
                         StableHash64(bytes, 2));
}

}  // namespace quadrants
