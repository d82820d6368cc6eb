// A pybind11 extension module built by Bazel (qd_pybind_extension).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <vector>

namespace {

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw std::invalid_argument("length mismatch");
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += a[i] * b[i];
  return sum;
}

}  // namespace

PYBIND11_MODULE(pybind11_smoke_ext, m) {
  m.doc() = "Bazel-built pybind11 smoke module";
  m.def("dot", &Dot, "Dot product of two float lists");
}
