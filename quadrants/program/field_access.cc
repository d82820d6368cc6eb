#include "quadrants/program/field_access.h"

#include <cstring>
#include <utility>
#include <vector>

#include "quadrants/common/status_macros.h"

namespace quadrants {

PlaceAccess::PlaceAccess(ArrayMemory& memory, char* root,
                         ir::PlaceLayout layout, int64_t element_bytes)
    : memory_(memory),
      begin_(root + layout.offset),
      layout_(std::move(layout)),
      element_bytes_(element_bytes) {
  for (int64_t extent : layout_.shape)
    count_ *= extent;
  span_ = count_ == 0 ? 0 : Offset(count_ - 1) + element_bytes_;
  // A permuted order (field order=) or another place between elements
  // breaks the packing even where the span has the right size.
  int64_t stride = element_bytes_;
  contiguous_ = layout_.affine();
  for (int axis = static_cast<int>(layout_.shape.size()) - 1; axis >= 0;
       --axis) {
    if (layout_.shape[axis] > 1 && layout_.axis_stride[axis] != stride)
      contiguous_ = false;
    stride *= layout_.shape[axis];
  }
}

int64_t PlaceAccess::Offset(int64_t linear) const {
  std::vector<int64_t> index(layout_.shape.size());
  for (int axis = static_cast<int>(layout_.shape.size()) - 1; axis >= 0;
       --axis) {
    index[axis] = linear % layout_.shape[axis];
    linear /= layout_.shape[axis];
  }
  return layout_.ByteOffset(index) - layout_.offset;
}

absl::Status PlaceAccess::Read(void* out) const {
  if (contiguous_)
    return memory_.CopyToHost(out, begin_, span_);
  std::vector<char> span(static_cast<size_t>(span_));
  QD_RETURN_IF_ERROR(memory_.CopyToHost(span.data(), begin_, span_));
  char* dst = static_cast<char*>(out);
  for (int64_t i = 0; i < count_; ++i)
    std::memcpy(dst + i * element_bytes_, span.data() + Offset(i),
                element_bytes_);
  return absl::OkStatus();
}

absl::Status PlaceAccess::Write(const void* in) const {
  if (contiguous_)
    return memory_.CopyFromHost(begin_, in, span_);
  // The other places' bytes in the span are written back as they are.
  std::vector<char> span(static_cast<size_t>(span_));
  QD_RETURN_IF_ERROR(memory_.CopyToHost(span.data(), begin_, span_));
  const char* src = static_cast<const char*>(in);
  for (int64_t i = 0; i < count_; ++i)
    std::memcpy(span.data() + Offset(i), src + i * element_bytes_,
                element_bytes_);
  return memory_.CopyFromHost(begin_, span.data(), span_);
}

absl::Status PlaceAccess::Fill(const void* element) const {
  std::vector<char> values(static_cast<size_t>(count_ * element_bytes_));
  for (int64_t i = 0; i < count_; ++i)
    std::memcpy(values.data() + i * element_bytes_, element, element_bytes_);
  return Write(values.data());
}

}  // namespace quadrants
