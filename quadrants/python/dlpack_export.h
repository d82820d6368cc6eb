#ifndef QUADRANTS_PYTHON_DLPACK_EXPORT_H_
#define QUADRANTS_PYTHON_DLPACK_EXPORT_H_

#include <pybind11/pybind11.h>

#include <memory>

#include "quadrants/program/ndarray.h"

namespace quadrants::python {

// Where an ndarray's memory is, as DLPack names devices.
struct DlpackDevice {
  int type = 1;  // kDLCPU = 1, kDLCUDA = 2, kDLROCM = 10
  int id = 0;
};

// A DLPack capsule viewing `array`'s memory (dense, row-major), which keeps
// the array alive until its consumer releases it: "dltensor" (DLPack 0.x,
// what torch.utils.dlpack.from_dlpack takes) or, with `versioned`,
// "dltensor_versioned" (DLPack 1.0).
pybind11::capsule NdarrayToDlpack(std::shared_ptr<Ndarray> array,
                                  DlpackDevice device, bool versioned);

}  // namespace quadrants::python

#endif  // QUADRANTS_PYTHON_DLPACK_EXPORT_H_
