#ifndef QUADRANTS_PYTHON_DLPACK_H_
#define QUADRANTS_PYTHON_DLPACK_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "quadrants/program/ndarray.h"

namespace quadrants::python {

// Where an ndarray's memory is, as DLPack names devices.
struct DlpackDevice {
  int type = 1;  // kDLCPU = 1, kDLCUDA = 2, kDLROCM = 10
  int id = 0;
};

// Memory a DLPack export views: `data` with `shape` and `strides` (in
// elements; empty for dense row-major), kept alive by `owner`.
struct StridedMemory {
  std::shared_ptr<void> owner;
  void* data = nullptr;
  ir::PrimitiveType dtype = ir::PrimitiveType::kF32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

// A DLPack capsule viewing `memory` (see NdarrayToDlpack for `versioned`),
// which keeps memory.owner until its consumer releases it.
pybind11::capsule StridedToDlpack(const StridedMemory& memory,
                                  DlpackDevice device, bool versioned);

// `object` as an owner a StridedMemory can hold (a Python object keeping
// memory alive, such as a field view), released under the GIL.
std::shared_ptr<void> KeepPythonObject(pybind11::object object);

// A DLPack capsule viewing `array`'s memory, which keeps the array alive
// until its consumer releases it: "dltensor" (DLPack 0.x, what
// torch.utils.dlpack.from_dlpack takes) or, with `versioned`,
// "dltensor_versioned" (DLPack 1.0). Exported axis k is the array's axis
// axes[k]: empty `axes` exports it dense and row-major, a permutation as
// permuted strides over the same memory.
pybind11::capsule NdarrayToDlpack(std::shared_ptr<Ndarray> array,
                                  DlpackDevice device, bool versioned,
                                  const std::vector<int>& axes = {});

// An ndarray over the memory of DLPack `capsule` (consuming it), which
// must be on `device`, dense and row-major, of a Quadrants dtype; `memory`
// is the backend's array memory the host copies go through. The producer's
// deleter runs when the ndarray is gone. Errors say what was expected and
// found.
std::shared_ptr<Ndarray> NdarrayFromDlpack(pybind11::capsule capsule,
                                           DlpackDevice device,
                                           std::shared_ptr<ArrayMemory> memory);

}  // namespace quadrants::python

#endif  // QUADRANTS_PYTHON_DLPACK_H_
