#ifndef QUADRANTS_LINALG_CUDA_CUSOLVER_LIBRARY_H_
#define QUADRANTS_LINALG_CUDA_CUSOLVER_LIBRARY_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quadrants/common/dynamic_library.h"

namespace quadrants::linalg::cuda {

// The parts of the cuSPARSE and cuSOLVER C APIs the sparse Cholesky uses,
// declared here (their ABI is stable across CUDA 11 to 13) so builds need
// no CUDA math headers and run where the libraries are absent.
using CusparseHandle = struct cusparseContext*;
using CusparseMatDescr = struct cusparseMatDescr*;
using CusparseSpVec = struct cusparseSpVecDescr*;
using CusparseDnVec = struct cusparseDnVecDescr*;
using CusolverSpHandle = struct cusolverSpContext*;
using CsrcholInfo = struct csrcholInfo*;

inline constexpr int kCusparseMatrixTypeGeneral = 0;
inline constexpr int kCusparseIndexBaseZero = 0;
inline constexpr int kCusparseIndex32I = 2;
inline constexpr int kCudaR32F = 0;
inline constexpr int kCudaR64F = 1;

// X(member, symbol, function type). Every call returns a status, 0 on
// success.
#define QD_CUSPARSE_FUNCTIONS(X)                                               \
  X(create, "cusparseCreate", int(CusparseHandle*))                            \
  X(destroy, "cusparseDestroy", int(CusparseHandle))                           \
  X(create_mat_descr, "cusparseCreateMatDescr", int(CusparseMatDescr*))        \
  X(destroy_mat_descr, "cusparseDestroyMatDescr", int(CusparseMatDescr))       \
  X(set_mat_type, "cusparseSetMatType", int(CusparseMatDescr, int))            \
  X(set_mat_index_base, "cusparseSetMatIndexBase", int(CusparseMatDescr, int)) \
  X(create_sp_vec, "cusparseCreateSpVec",                                      \
    int(CusparseSpVec*, int64_t, int64_t, void*, void*, int, int, int))        \
  X(destroy_sp_vec, "cusparseDestroySpVec", int(CusparseSpVec))                \
  X(create_dn_vec, "cusparseCreateDnVec",                                      \
    int(CusparseDnVec*, int64_t, void*, int))                                  \
  X(destroy_dn_vec, "cusparseDestroyDnVec", int(CusparseDnVec))                \
  X(gather, "cusparseGather",                                                  \
    int(CusparseHandle, CusparseDnVec, CusparseSpVec))                         \
  X(scatter, "cusparseScatter",                                                \
    int(CusparseHandle, CusparseSpVec, CusparseDnVec))

// cuSOLVER's sparse Cholesky (the csrchol "low-level" API), in f32 (S)
// and f64 (D).
#define QD_CUSOLVER_FUNCTIONS(X)                                              \
  X(sp_create, "cusolverSpCreate", int(CusolverSpHandle*))                    \
  X(sp_destroy, "cusolverSpDestroy", int(CusolverSpHandle))                   \
  X(create_chol_info, "cusolverSpCreateCsrcholInfo", int(CsrcholInfo*))       \
  X(destroy_chol_info, "cusolverSpDestroyCsrcholInfo", int(CsrcholInfo))      \
  X(chol_analysis, "cusolverSpXcsrcholAnalysis",                              \
    int(CusolverSpHandle, int, int, CusparseMatDescr, const int*, const int*, \
        CsrcholInfo))                                                         \
  X(s_chol_buffer_info, "cusolverSpScsrcholBufferInfo",                       \
    int(CusolverSpHandle, int, int, CusparseMatDescr, const float*,           \
        const int*, const int*, CsrcholInfo, size_t*, size_t*))               \
  X(d_chol_buffer_info, "cusolverSpDcsrcholBufferInfo",                       \
    int(CusolverSpHandle, int, int, CusparseMatDescr, const double*,          \
        const int*, const int*, CsrcholInfo, size_t*, size_t*))               \
  X(s_chol_factor, "cusolverSpScsrcholFactor",                                \
    int(CusolverSpHandle, int, int, CusparseMatDescr, const float*,           \
        const int*, const int*, CsrcholInfo, void*))                          \
  X(d_chol_factor, "cusolverSpDcsrcholFactor",                                \
    int(CusolverSpHandle, int, int, CusparseMatDescr, const double*,          \
        const int*, const int*, CsrcholInfo, void*))                          \
  X(s_chol_zero_pivot, "cusolverSpScsrcholZeroPivot",                         \
    int(CusolverSpHandle, CsrcholInfo, float, int*))                          \
  X(d_chol_zero_pivot, "cusolverSpDcsrcholZeroPivot",                         \
    int(CusolverSpHandle, CsrcholInfo, double, int*))                         \
  X(s_chol_solve, "cusolverSpScsrcholSolve",                                  \
    int(CusolverSpHandle, int, const float*, float*, CsrcholInfo, void*))     \
  X(d_chol_solve, "cusolverSpDcsrcholSolve",                                  \
    int(CusolverSpHandle, int, const double*, double*, CsrcholInfo, void*))

template <typename Function>
using Entry = Function*;
#define QD_CUSOLVER_DECLARE_ENTRY(member, symbol, signature) \
  Entry<signature> member = nullptr;

// cuSPARSE and cuSOLVER opened with dlopen, cuSPARSE first (cuSOLVER
// needs it).
class CusolverLibrary {
 public:
  // The process's libraries, opened once from the CUDA 13, 12 or 11
  // sonames (the toolkit's, or a pip wheel's already loaded, as PyTorch
  // loads them). A failure is a kUnavailable error naming the library that
  // is missing, what needs it and how to provide it; it is not cached, so
  // a later call finds a library made loadable meanwhile.
  static absl::StatusOr<const CusolverLibrary*> Get();
  // Opens the first loadable name of each list.
  static absl::StatusOr<std::unique_ptr<CusolverLibrary>> Open(
      std::initializer_list<const char*> cusparse_names,
      std::initializer_list<const char*> cusolver_names);

  // OK, or a kRuntime error "<what> failed: <library> status <status>".
  static absl::Status CheckSparse(int status, const char* what);
  static absl::Status CheckSolver(int status, const char* what);

  QD_CUSPARSE_FUNCTIONS(QD_CUSOLVER_DECLARE_ENTRY)
  QD_CUSOLVER_FUNCTIONS(QD_CUSOLVER_DECLARE_ENTRY)

 private:
  CusolverLibrary() = default;

  std::unique_ptr<DynamicLibrary> cusparse_;
  std::unique_ptr<DynamicLibrary> cusolver_;
};

}  // namespace quadrants::linalg::cuda

#endif  // QUADRANTS_LINALG_CUDA_CUSOLVER_LIBRARY_H_
