#ifndef QUADRANTS_LINALG_CUDA_CUDA_SPARSE_CHOLESKY_H_
#define QUADRANTS_LINALG_CUDA_CUDA_SPARSE_CHOLESKY_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quadrants/linalg/sparse_solver.h"

namespace quadrants::linalg::cuda {

// A = L L^T on a CUDA device with cuSOLVER's sparse Cholesky: the host
// orders A (AMD or COLAMD, as the Eigen solvers do) and builds the
// reordered matrix's pattern; the device factorizes and solves, and
// cuSPARSE permutes right-hand sides and solutions on the device. Like the
// host LLT, it reads A's lower triangle as a symmetric matrix.
template <typename Scalar>
class CudaSparseCholesky : public SparseDirectSolver<Scalar> {
 public:
  // A solver on GPU `device_id`; a kUnavailable error when there is no
  // CUDA device or cuSPARSE/cuSOLVER cannot be loaded.
  static absl::StatusOr<std::unique_ptr<CudaSparseCholesky>> Create(
      FillOrdering ordering, int device_id);

  // x = A^-1 b with b and x device addresses of n values each (A^-T = A^-1
  // here). It is queued on the default stream after the work before it.
  virtual absl::Status SolveOnDevice(uint64_t b, uint64_t x) = 0;
};

extern template class CudaSparseCholesky<float>;
extern template class CudaSparseCholesky<double>;

}  // namespace quadrants::linalg::cuda

#endif  // QUADRANTS_LINALG_CUDA_CUDA_SPARSE_CHOLESKY_H_
