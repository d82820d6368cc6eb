#include "quadrants/python/dlpack_export.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "quadrants/ir/types.h"

namespace quadrants::python {
namespace {

namespace py = pybind11;

// The DLPack ABI (dlpack.h, versions 0.8 and 1.0), as far as an export
// needs it.
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBool = 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // null: dense row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

DLDataType DataType(ir::PrimitiveType t) {
  const uint8_t bits = static_cast<uint8_t>(ir::BitWidth(t));
  if (t == ir::PrimitiveType::kU1)
    return {6, 8, 1};
  if (ir::IsFloat(t))
    return {2, bits, 1};
  return {static_cast<uint8_t>(ir::IsSigned(t) ? 0 : 1), bits, 1};
}

// What a capsule owns: the array (kept alive) and the shape the tensor
// points at, next to the DLPack struct itself.
template <typename Managed>
struct Export {
  std::shared_ptr<Ndarray> array;
  std::vector<int64_t> shape;
  Managed managed{};
};

template <typename Managed>
void Delete(Managed* self) {
  delete static_cast<Export<Managed>*>(self->manager_ctx);
}

template <typename Managed>
Managed* NewManaged(std::shared_ptr<Ndarray> array, DlpackDevice device) {
  auto* owner = new Export<Managed>{std::move(array), {}, {}};
  owner->shape = owner->array->shape();
  DLTensor& t = owner->managed.dl_tensor;
  t.data = owner->array->data();
  t.device = {device.type, device.id};
  t.ndim = static_cast<int32_t>(owner->shape.size());
  t.dtype = DataType(owner->array->dtype());
  t.shape = owner->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  owner->managed.manager_ctx = owner;
  owner->managed.deleter = &Delete<Managed>;
  return &owner->managed;
}

// Frees the export when the capsule dies unconsumed (a consumer renames
// it "used_..." and calls the deleter itself).
template <typename Managed>
void ReleaseUnconsumed(PyObject* capsule, const char* name) {
  if (!PyCapsule_IsValid(capsule, name))
    return;
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (managed != nullptr && managed->deleter != nullptr)
    managed->deleter(managed);
}

}  // namespace

py::capsule NdarrayToDlpack(std::shared_ptr<Ndarray> array,
                            DlpackDevice device, bool versioned) {
  if (versioned) {
    auto* managed =
        NewManaged<DLManagedTensorVersioned>(std::move(array), device);
    managed->version = {1, 0};
    managed->flags = 0;  // writable, not a copy
    PyObject* capsule = PyCapsule_New(
        managed, "dltensor_versioned", [](PyObject* self) {
          ReleaseUnconsumed<DLManagedTensorVersioned>(self,
                                                      "dltensor_versioned");
        });
    return py::reinterpret_steal<py::capsule>(capsule);
  }
  auto* managed = NewManaged<DLManagedTensor>(std::move(array), device);
  PyObject* capsule = PyCapsule_New(managed, "dltensor", [](PyObject* self) {
    ReleaseUnconsumed<DLManagedTensor>(self, "dltensor");
  });
  return py::reinterpret_steal<py::capsule>(capsule);
}

}  // namespace quadrants::python
