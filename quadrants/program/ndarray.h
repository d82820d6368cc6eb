#ifndef QUADRANTS_PROGRAM_NDARRAY_H_
#define QUADRANTS_PROGRAM_NDARRAY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "quadrants/ir/constant.h"
#include "quadrants/ir/types.h"
#include "quadrants/runtime/array_memory.h"

namespace quadrants {

// A dense, row-major, zero-initialized array in the backend's array memory;
// the host reaches it through that memory's copies. data() is the address
// kernels use, which the host may not dereference.
class Ndarray {
 public:
  static absl::StatusOr<std::shared_ptr<Ndarray>> Create(
      ir::PrimitiveType dtype, std::vector<int64_t> shape,
      std::shared_ptr<ArrayMemory> memory =
          std::make_shared<HostMemoryAllocator>());

  // An ndarray over `storage` (at least the shape's bytes), such as memory
  // borrowed from another library.
  static absl::StatusOr<std::shared_ptr<Ndarray>> Wrap(
      ir::PrimitiveType dtype, std::vector<int64_t> shape, ArrayBuffer storage);

  ir::PrimitiveType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const { return num_elements_; }
  int64_t element_bytes() const { return element_bytes_; }
  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }

  int64_t data_bytes() const { return num_elements_ * element_bytes_; }
  // Every element, dense and row-major, to and from host memory.
  absl::Status CopyToHost(void* out) const;
  absl::Status CopyFromHost(const void* in);
  absl::Status Fill(const ir::Constant& value);

  // Element access with bounds checks (errors name the index and shape).
  absl::StatusOr<ir::Constant> Read(absl::Span<const int64_t> index) const;
  absl::Status Write(absl::Span<const int64_t> index,
                     const ir::Constant& value);

  // Bumped by every host write and every kernel launch that may write the
  // array; caches keyed on the contents revalidate against it.
  uint64_t data_generation() const { return data_generation_; }
  void BumpDataGeneration() { ++data_generation_; }

  // Public for std::make_shared only; use Create().
  struct Key {};
  Ndarray(Key, ir::PrimitiveType dtype, std::vector<int64_t> shape,
          int64_t num_elements, ArrayBuffer storage);

 private:
  absl::StatusOr<int64_t> Offset(absl::Span<const int64_t> index) const;

  ir::PrimitiveType dtype_;
  std::vector<int64_t> shape_;
  int64_t num_elements_;
  int64_t element_bytes_;
  ArrayBuffer storage_;
  uint64_t data_generation_ = 0;
};

}  // namespace quadrants

#endif  // QUADRANTS_PROGRAM_NDARRAY_H_
