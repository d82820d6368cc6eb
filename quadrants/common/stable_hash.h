#ifndef QUADRANTS_COMMON_STABLE_HASH_H_
#define QUADRANTS_COMMON_STABLE_HASH_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace quadrants {

// A 64-bit hash of `bytes` that depends on nothing but the bytes and the
// seed, so it is the same in every process and build: fit for on-disk keys
// and checksums (not for adversarial input). It reads eight bytes a step.
uint64_t StableHash64(absl::string_view bytes, uint64_t seed = 0);

// 128 bits as 32 hexadecimal digits, from two independently seeded hashes.
std::string StableHash128Hex(absl::string_view bytes);

}  // namespace quadrants

#endif  // QUADRANTS_COMMON_STABLE_HASH_H_
