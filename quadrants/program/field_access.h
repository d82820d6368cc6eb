#ifndef QUADRANTS_PROGRAM_FIELD_ACCESS_H_
#define QUADRANTS_PROGRAM_FIELD_ACCESS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/array_memory.h"

namespace quadrants {

// Bulk host access to one field place of the root buffer, whose elements
// may interleave with other places' (a struct of fields). Each call moves
// the place's byte span once through `memory`'s copies: contiguous places
// straight into or out of the host array, interleaved ones through a host
// copy of the span (read, modified and written back for writes). Host
// arrays are dense and row-major, `element_bytes` per element.
class PlaceAccess {
 public:
  PlaceAccess(ArrayMemory& memory, char* root, ir::PlaceLayout layout,
              int64_t element_bytes);

  int64_t count() const { return count_; }
  absl::Status Read(void* out) const;
  absl::Status Write(const void* in) const;
  // Writes the one element at `element` to every index.
  absl::Status Fill(const void* element) const;

 private:
  int64_t Offset(int64_t linear) const;  // from the span's start

  ArrayMemory& memory_;
  char* begin_;  // the span's first byte in `memory_`
  ir::PlaceLayout layout_;
  int64_t element_bytes_;
  int64_t count_ = 1;
  int64_t span_ = 0;  // bytes from the first element to past the last
  // Elements packed in row-major order: the span is the host array.
  bool contiguous_ = true;
};

}  // namespace quadrants

#endif  // QUADRANTS_PROGRAM_FIELD_ACCESS_H_
