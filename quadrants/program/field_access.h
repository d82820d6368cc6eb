#ifndef QUADRANTS_PROGRAM_FIELD_ACCESS_H_
#define QUADRANTS_PROGRAM_FIELD_ACCESS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/array_memory.h"

namespace quadrants {

// Bulk host access to the places of one field's components (one place for
// a scalar field), whose elements may interleave with each other's and with
// other places' (vector fields, structs of fields). Host arrays are dense
// and row-major over the field's index, the component as the last axis,
// `element_bytes` per component.
//
// Components packed exactly as the host array move in one copy. Otherwise
// the elements move by a strided loop in C++ over the host's cores, straight
// from and to the memory where the host addresses it (after the caller's
// sync), else through a host copy of the places' byte span (read, modified
// and written back for writes). Blocked layouts (several digits per axis)
// take a per-element path.
class PlaceAccess {
 public:
  PlaceAccess(ArrayMemory& memory, char* root,
              std::vector<ir::PlaceLayout> components, int64_t element_bytes);

  int64_t count() const { return count_; }  // elements per component
  absl::Status Read(void* out) const;
  absl::Status Write(const void* in) const;
  // Writes the one value at `element` to every index of every component.
  absl::Status Fill(const void* element) const;

 private:
  enum class Direction { kToHost, kFromHost };
  // Moves every element between the span at `span` (the memory, or a host
  // copy of it) and the dense host array at `host`.
  void Gather(Direction direction, char* span, char* host) const;
  ArrayMemory& memory_;
  char* begin_;  // the span's first byte in `memory_`
  int64_t first_ = 0;  // the span's first byte, from the root
  std::vector<ir::PlaceLayout> components_;
  int64_t element_bytes_;
  int64_t count_ = 1;
  int64_t span_ = 0;  // bytes from the first element to past the last
  // Elements packed in the host array's order: the span is the host array.
  bool packed_ = true;
  bool affine_ = true;  // every component has one digit per axis
};

}  // namespace quadrants

#endif  // QUADRANTS_PROGRAM_FIELD_ACCESS_H_
