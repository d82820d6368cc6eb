#include "quadrants/program/ndarray.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/snode.h"
#include "quadrants/program/scalar_access.h"

namespace quadrants {

absl::StatusOr<std::shared_ptr<Ndarray>> Ndarray::Create(
    ir::PrimitiveType dtype, std::vector<int64_t> shape,
    std::shared_ptr<ArrayMemory> memory) {
  if (shape.size() > static_cast<size_t>(ir::kMaxAxes)) {
    return MakeError(ErrorKind::kType,
                     absl::StrCat("an ndarray has at most ", ir::kMaxAxes,
                                  " dimensions, got ", shape.size()));
  }
  int64_t count = 1;
  for (int64_t extent : shape) {
    if (extent < 0) {
      return MakeError(
          ErrorKind::kType,
          absl::StrCat("ndarray shape (", absl::StrJoin(shape, ", "),
                       ") has a negative extent"));
    }
    count *= extent;
  }
  // At least one byte so data() is a valid pointer for empty arrays.
  const int64_t bytes = count * std::max(1, ir::BitWidth(dtype) / 8);
  absl::StatusOr<ArrayBuffer> storage =
      ArrayBuffer::Allocate(std::move(memory), bytes);
  if (!storage.ok()) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("allocating an ndarray of ", ir::PrimitiveTypeName(dtype),
                     " of shape (", absl::StrJoin(shape, ", "), "), ", bytes,
                     " bytes: ", storage.status().message()));
  }
  return std::make_shared<Ndarray>(Key(), dtype, std::move(shape), count,
                                   *std::move(storage));
}

absl::StatusOr<std::shared_ptr<Ndarray>> Ndarray::Wrap(
    ir::PrimitiveType dtype, std::vector<int64_t> shape, ArrayBuffer storage) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  const int64_t bytes = count * std::max(1, ir::BitWidth(dtype) / 8);
  if (shape.size() > static_cast<size_t>(ir::kMaxAxes) ||
      bytes > storage.size()) {
    return MakeError(ErrorKind::kType,
                     absl::StrCat("an ndarray of shape (", absl::StrJoin(shape, ", "),
                                  ") needs ", bytes, " bytes, the memory has ",
                                  storage.size()));
  }
  return std::make_shared<Ndarray>(Key(), dtype, std::move(shape), count,
                                   std::move(storage));
}

Ndarray::Ndarray(Key, ir::PrimitiveType dtype, std::vector<int64_t> shape,
                 int64_t num_elements, ArrayBuffer storage)
    : dtype_(dtype),
      shape_(std::move(shape)),
      num_elements_(num_elements),
      element_bytes_(std::max(1, ir::BitWidth(dtype) / 8)),
      storage_(std::move(storage)) {}

absl::StatusOr<int64_t> Ndarray::Offset(absl::Span<const int64_t> index) const {
  if (index.size() != shape_.size()) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("ndarray of shape (", absl::StrJoin(shape_, ", "),
                     ") needs ", shape_.size(), " indices, got ",
                     index.size()));
  }
  int64_t linear = 0;
  for (size_t axis = 0; axis < shape_.size(); ++axis) {
    if (index[axis] < 0 || index[axis] >= shape_[axis]) {
      // An assertion error, as upstream's checked host access raises.
      return MakeError(
          ErrorKind::kAssertion,
          absl::StrCat("index [", absl::StrJoin(index, ", "),
                       "] is out of bounds for an ndarray of shape (",
                       absl::StrJoin(shape_, ", "), ")"));
    }
    linear = linear * shape_[axis] + index[axis];
  }
  return linear * element_bytes_;
}

absl::StatusOr<ir::Constant> Ndarray::Read(
    absl::Span<const int64_t> index) const {
  absl::StatusOr<int64_t> offset = Offset(index);
  if (!offset.ok())
    return offset.status();
  int64_t element = 0;
  absl::Status copied = storage_.memory().CopyToHost(
      &element, storage_.get() + *offset, element_bytes_);
  if (!copied.ok())
    return copied;
  return ReadScalar(&element, dtype_);
}

absl::Status Ndarray::Write(absl::Span<const int64_t> index,
                            const ir::Constant& value) {
  absl::StatusOr<int64_t> offset = Offset(index);
  if (!offset.ok())
    return offset.status();
  int64_t element = 0;
  WriteScalar(&element, dtype_, value);
  absl::Status copied = storage_.memory().CopyFromHost(
      storage_.get() + *offset, &element, element_bytes_);
  BumpDataGeneration();
  return copied;
}

absl::Status Ndarray::CopyToHost(void* out) const {
  return storage_.memory().CopyToHost(out, storage_.get(), data_bytes());
}

absl::Status Ndarray::CopyFromHost(const void* in) {
  BumpDataGeneration();
  return storage_.memory().CopyFromHost(storage_.get(), in, data_bytes());
}

absl::Status Ndarray::Fill(const ir::Constant& value) {
  int64_t element = 0;
  WriteScalar(&element, dtype_, value);
  std::vector<char> values(static_cast<size_t>(data_bytes()));
  for (int64_t i = 0; i < num_elements_; ++i)
    std::memcpy(values.data() + i * element_bytes_, &element, element_bytes_);
  return CopyFromHost(values.data());
}

}  // namespace quadrants
