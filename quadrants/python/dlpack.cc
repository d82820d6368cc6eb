#include "quadrants/python/dlpack.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
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

// What a capsule owns: the owner of the memory (kept alive) and the shape
// and strides the tensor points at, next to the DLPack struct itself.
template <typename Managed>
struct Export {
  std::shared_ptr<void> owner;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements; empty: dense and row-major
  Managed managed{};
};

template <typename Managed>
void Delete(Managed* self) {
  delete static_cast<Export<Managed>*>(self->manager_ctx);
}

template <typename Managed>
Managed* NewManaged(const StridedMemory& memory, DlpackDevice device) {
  auto* owner =
      new Export<Managed>{memory.owner, memory.shape, memory.strides, {}};
  DLTensor& t = owner->managed.dl_tensor;
  t.data = memory.data;
  t.device = {device.type, device.id};
  t.ndim = static_cast<int32_t>(owner->shape.size());
  t.dtype = DataType(memory.dtype);
  t.shape = owner->shape.data();
  t.strides = owner->strides.empty() ? nullptr : owner->strides.data();
  t.byte_offset = 0;
  owner->managed.manager_ctx = owner;
  owner->managed.deleter = &Delete<Managed>;
  return &owner->managed;
}

// Exported axis k is the array's axis axes[k] (all axes when `axes` is
// empty): a permutation shows as permuted strides over the same memory.
StridedMemory NdarrayMemory(std::shared_ptr<Ndarray> array,
                            const std::vector<int>& axes) {
  StridedMemory memory;
  memory.data = array->data();
  memory.dtype = array->dtype();
  const std::vector<int64_t>& physical = array->shape();
  if (axes.empty()) {
    memory.shape = physical;
  } else {
    std::vector<int64_t> dense(physical.size(), 1);
    for (int axis = static_cast<int>(physical.size()) - 2; axis >= 0; --axis)
      dense[axis] = dense[axis + 1] * physical[axis + 1];
    for (int axis : axes) {
      memory.shape.push_back(physical[axis]);
      memory.strides.push_back(dense[axis]);
    }
  }
  memory.owner = std::move(array);
  return memory;
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

absl::StatusOr<ir::PrimitiveType> FromDataType(DLDataType t) {
  using ir::PrimitiveType;
  if (t.lanes == 1) {
    switch (t.code) {
      case 6:
        if (t.bits == 8)
          return PrimitiveType::kU1;
        break;
      case 2:
        if (t.bits == 16)
          return PrimitiveType::kF16;
        if (t.bits == 32)
          return PrimitiveType::kF32;
        if (t.bits == 64)
          return PrimitiveType::kF64;
        break;
      case 0:
      case 1: {
        const bool u = t.code == 1;
        if (t.bits == 8)
          return u ? PrimitiveType::kU8 : PrimitiveType::kI8;
        if (t.bits == 16)
          return u ? PrimitiveType::kU16 : PrimitiveType::kI16;
        if (t.bits == 32)
          return u ? PrimitiveType::kU32 : PrimitiveType::kI32;
        if (t.bits == 64)
          return u ? PrimitiveType::kU64 : PrimitiveType::kI64;
        break;
      }
    }
  }
  return MakeError(
      ErrorKind::kType,
      absl::StrCat("from_dlpack: DLPack dtype (code ", t.code, ", bits ",
                   t.bits, ", lanes ", t.lanes, ") has no Quadrants type"));
}

// The tensor of a DLPack capsule of either version, and how to give it
// back.
struct Imported {
  DLTensor* tensor = nullptr;
  std::function<void()> release;
};

Imported Consume(py::capsule& capsule) {
  PyObject* object = capsule.ptr();
  Imported out;
  if (PyCapsule_IsValid(object, "dltensor_versioned")) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(object, "dltensor_versioned"));
    PyCapsule_SetName(object, "used_dltensor_versioned");
    out.tensor = &managed->dl_tensor;
    out.release = [managed] {
      if (managed->deleter != nullptr)
        managed->deleter(managed);
    };
    return out;
  }
  if (PyCapsule_IsValid(object, "dltensor")) {
    auto* managed =
        static_cast<DLManagedTensor*>(PyCapsule_GetPointer(object, "dltensor"));
    PyCapsule_SetName(object, "used_dltensor");
    out.tensor = &managed->dl_tensor;
    out.release = [managed] {
      if (managed->deleter != nullptr)
        managed->deleter(managed);
    };
    return out;
  }
  throw QuadrantsError(ErrorKind::kType,
                       "from_dlpack: not an unconsumed DLPack capsule "
                       "(\"dltensor\" or \"dltensor_versioned\")");
}

}  // namespace

std::shared_ptr<Ndarray> NdarrayFromDlpack(
    py::capsule capsule, DlpackDevice device,
    std::shared_ptr<ArrayMemory> memory) {
  Imported imported = Consume(capsule);
  const DLTensor& t = *imported.tensor;
  std::string problem;
  if (t.device.device_type != device.type || t.device.device_id != device.id) {
    problem =
        absl::StrCat("the tensor is on DLPack device (", t.device.device_type,
                     ", ", t.device.device_id, "), the kernels run on (",
                     device.type, ", ", device.id, ")");
  }
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  if (problem.empty() && t.strides != nullptr) {
    int64_t dense = 1;
    for (int axis = t.ndim - 1; axis >= 0; --axis) {
      if (shape[axis] > 1 && t.strides[axis] != dense) {
        problem = "the tensor is not dense and row-major (contiguous)";
        break;
      }
      dense *= shape[axis];
    }
  }
  absl::StatusOr<ir::PrimitiveType> dtype = FromDataType(t.dtype);
  if (problem.empty() && !dtype.ok())
    problem = std::string(dtype.status().message());
  if (!problem.empty()) {
    imported.release();
    throw QuadrantsError(ErrorKind::kType,
                         absl::StrCat("from_dlpack: ", problem));
  }
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  const int64_t bytes =
      std::max<int64_t>(1, count * std::max(1, ir::BitWidth(*dtype) / 8));
  char* data = static_cast<char*>(t.data) + t.byte_offset;
  auto lender = std::make_shared<BorrowedMemory>(std::move(memory),
                                                 std::move(imported.release));
  absl::StatusOr<std::shared_ptr<Ndarray>> array =
      Ndarray::Wrap(*dtype, std::move(shape),
                    ArrayBuffer::Adopt(std::move(lender), data, bytes));
  if (!array.ok())
    throw QuadrantsError(GetErrorKind(array.status()),
                         std::string(array.status().message()));
  return *std::move(array);
}

py::capsule NdarrayToDlpack(std::shared_ptr<Ndarray> array, DlpackDevice device,
                            bool versioned, const std::vector<int>& axes) {
  const size_t rank = array->shape().size();
  std::vector<bool> seen(rank, false);
  bool permutation = axes.empty() || axes.size() == rank;
  for (int axis : axes) {
    permutation = permutation && axis >= 0 && axis < static_cast<int>(rank) &&
                  !seen[axis];
    if (permutation)
      seen[axis] = true;
  }
  if (!permutation) {
    throw QuadrantsError(
        ErrorKind::kType,
        absl::StrCat("to_dlpack: axes must be a permutation of "
                     "the ndarray's ",
                     rank, " axes"));
  }
  return StridedToDlpack(NdarrayMemory(std::move(array), axes), device,
                         versioned);
}

py::capsule StridedToDlpack(const StridedMemory& memory, DlpackDevice device,
                            bool versioned) {
  if (versioned) {
    auto* managed = NewManaged<DLManagedTensorVersioned>(memory, device);
    managed->version = {1, 0};
    managed->flags = 0;  // writable, not a copy
    PyObject* capsule =
        PyCapsule_New(managed, "dltensor_versioned", [](PyObject* self) {
          ReleaseUnconsumed<DLManagedTensorVersioned>(self,
                                                      "dltensor_versioned");
        });
    return py::reinterpret_steal<py::capsule>(capsule);
  }
  auto* managed = NewManaged<DLManagedTensor>(memory, device);
  PyObject* capsule = PyCapsule_New(managed, "dltensor", [](PyObject* self) {
    ReleaseUnconsumed<DLManagedTensor>(self, "dltensor");
  });
  return py::reinterpret_steal<py::capsule>(capsule);
}

std::shared_ptr<void> KeepPythonObject(py::object object) {
  // The consumer may release the tensor on any thread: the reference is
  // dropped holding the GIL.
  return std::shared_ptr<void>(object.release().ptr(), [](void* p) {
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
}

}  // namespace quadrants::python
