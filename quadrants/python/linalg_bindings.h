#ifndef QUADRANTS_PYTHON_LINALG_BINDINGS_H_
#define QUADRANTS_PYTHON_LINALG_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace quadrants::python {

// qd.linalg's host solvers: SparseDirectSolverF32 / SparseDirectSolverF64.
void BindLinalg(pybind11::module_& m);

}  // namespace quadrants::python

#endif  // QUADRANTS_PYTHON_LINALG_BINDINGS_H_
