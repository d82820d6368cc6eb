#include "quadrants/linalg/cuda/cuda_sparse_cholesky.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/linalg/cuda/cusolver_library.h"
#include "quadrants/runtime/cuda/cuda_driver.h"

namespace quadrants::linalg::cuda {
namespace {

using quadrants::cuda::CudaDriver;

// `bytes` of device memory, freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Release(); }

  absl::Status Allocate(std::shared_ptr<CudaDriver> driver, size_t bytes) {
    Release();
    driver_ = std::move(driver);
    QD_RETURN_IF_ERROR(driver_->MakeCurrent());
    CUdeviceptr address = 0;
    absl::Status status = driver_->Check(
        driver_->cuMemAlloc(&address, std::max<size_t>(bytes, 1)),
        "cuMemAlloc");
    if (!status.ok()) {
      return MakeError(
          ErrorKind::kRuntime,
          absl::StrCat("the sparse Cholesky factorization needs ", bytes,
                       " more bytes of device memory: ", status.message()));
    }
    address_ = address;
    return absl::OkStatus();
  }

  absl::Status CopyFromHost(const void* host, size_t bytes) {
    return driver_->Check(driver_->cuMemcpyHtoD(address_, host, bytes),
                          "cuMemcpyHtoD");
  }

  absl::Status CopyToHost(void* host, size_t bytes) const {
    return driver_->Check(driver_->cuMemcpyDtoH(host, address_, bytes),
                          "cuMemcpyDtoH");
  }

  bool allocated() const { return address_ != 0; }
  void* get() const { return reinterpret_cast<void*>(address_); }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(address_);
  }

 private:
  void Release() {
    if (address_ != 0 && driver_->MakeCurrent().ok())
      driver_->cuMemFree(address_);
    address_ = 0;
  }

  std::shared_ptr<CudaDriver> driver_;
  CUdeviceptr address_ = 0;
};

// The reordered matrix B = A(order, order), stored whole (both triangles)
// in CSR with 32-bit indices, as cuSOLVER takes it; source[k] is the entry
// of A whose value B's k-th entry holds.
struct ReorderedPattern {
  std::vector<int> row_ptr, col_ind;
  std::vector<int64_t> source;
};

ReorderedPattern Reorder(const CsrPattern& a, const std::vector<int>& order) {
  const int64_t n = a.rows;
  std::vector<int> position(n);
  for (int64_t k = 0; k < n; ++k)
    position[order[k]] = static_cast<int>(k);
  ReorderedPattern b;
  b.row_ptr.assign(n + 1, 0);
  auto each_entry = [&](auto&& visit) {
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
        const int64_t c = a.indices[k];
        if (c > r)
          continue;
        visit(position[r], position[c], k);
        if (c < r)
          visit(position[c], position[r], k);
      }
    }
  };
  each_entry([&](int row, int, int64_t) { ++b.row_ptr[row + 1]; });
  std::partial_sum(b.row_ptr.begin(), b.row_ptr.end(), b.row_ptr.begin());
  const int64_t nnz = b.row_ptr[n];
  b.col_ind.resize(nnz);
  b.source.resize(nnz);
  std::vector<int> next(b.row_ptr.begin(), b.row_ptr.end() - 1);
  each_entry([&](int row, int col, int64_t k) {
    const int slot = next[row]++;
    b.col_ind[slot] = col;
    b.source[slot] = k;
  });
  std::vector<std::pair<int, int64_t>> row;
  for (int64_t r = 0; r < n; ++r) {
    const int begin = b.row_ptr[r], end = b.row_ptr[r + 1];
    row.clear();
    for (int k = begin; k < end; ++k)
      row.emplace_back(b.col_ind[k], b.source[k]);
    std::sort(row.begin(), row.end());
    for (int k = begin; k < end; ++k)
      std::tie(b.col_ind[k], b.source[k]) = row[k - begin];
  }
  return b;
}

template <typename Scalar>
class CusolverCholesky final : public CudaSparseCholesky<Scalar> {
 public:
  static constexpr bool kDouble = std::is_same_v<Scalar, double>;

  CusolverCholesky(std::shared_ptr<CudaDriver> driver,
                   const CusolverLibrary* lib, FillOrdering ordering)
      : driver_(std::move(driver)),
        lib_(lib),
        ordering_(ordering),
        name_(ordering == FillOrdering::kAMD ? "LLT/AMD on CUDA"
                                             : "LLT/COLAMD on CUDA") {}

  ~CusolverCholesky() override {
    if (!driver_->MakeCurrent().ok())
      return;
    if (info_ != nullptr)
      lib_->destroy_chol_info(info_);
    if (descr_ != nullptr)
      lib_->destroy_mat_descr(descr_);
    if (solver_ != nullptr)
      lib_->sp_destroy(solver_);
    if (sparse_ != nullptr)
      lib_->destroy(sparse_);
  }

  absl::Status Init() {
    QD_RETURN_IF_ERROR(driver_->MakeCurrent());
    QD_RETURN_IF_ERROR(
        CusolverLibrary::CheckSparse(lib_->create(&sparse_), "cusparseCreate"));
    QD_RETURN_IF_ERROR(CusolverLibrary::CheckSolver(lib_->sp_create(&solver_),
                                                    "cusolverSpCreate"));
    QD_RETURN_IF_ERROR(CusolverLibrary::CheckSparse(
        lib_->create_mat_descr(&descr_), "cusparseCreateMatDescr"));
    QD_RETURN_IF_ERROR(CusolverLibrary::CheckSparse(
        lib_->set_mat_type(descr_, kCusparseMatrixTypeGeneral),
        "cusparseSetMatType"));
    return CusolverLibrary::CheckSparse(
        lib_->set_mat_index_base(descr_, kCusparseIndexBaseZero),
        "cusparseSetMatIndexBase");
  }

  absl::Status AnalyzePattern(const CsrPattern& pattern) override {
    analyzed_ = factorized_ = ok_ = false;
    QD_RETURN_IF_ERROR(CheckSquarePattern(pattern));
    std::vector<int> order = SymmetricFillOrdering(pattern, ordering_);
    ReorderedPattern b = Reorder(pattern, order);
    if (b.col_ind.size() > INT32_MAX) {
      return MakeError(
          ErrorKind::kType,
          absl::StrCat(name_, ": the symmetric matrix has ", b.col_ind.size(),
                       " entries; cuSOLVER takes at most ", INT32_MAX));
    }
    n_ = pattern.rows;
    nnz_ = static_cast<int>(b.col_ind.size());
    QD_RETURN_IF_ERROR(Upload(row_ptr_, b.row_ptr));
    QD_RETURN_IF_ERROR(Upload(col_ind_, b.col_ind));
    QD_RETURN_IF_ERROR(Upload(order_, order));
    QD_RETURN_IF_ERROR(values_.Allocate(driver_, nnz_ * sizeof(Scalar)));
    for (DeviceBuffer* vector : {&permuted_b_, &permuted_x_, &b_, &x_})
      QD_RETURN_IF_ERROR(vector->Allocate(driver_, n_ * sizeof(Scalar)));
    source_ = std::move(b.source);
    order_host_ = std::move(order);
    indptr_.assign(pattern.indptr.begin(), pattern.indptr.end());
    indices_.assign(pattern.indices.begin(), pattern.indices.end());
    QD_RETURN_IF_ERROR(driver_->MakeCurrent());
    if (info_ != nullptr)
      lib_->destroy_chol_info(info_);
    info_ = nullptr;
    QD_RETURN_IF_ERROR(CusolverLibrary::CheckSolver(
        lib_->create_chol_info(&info_), "cusolverSpCreateCsrcholInfo"));
    QD_RETURN_IF_ERROR(CusolverLibrary::CheckSolver(
        lib_->chol_analysis(solver_, static_cast<int>(n_), nnz_, descr_,
                            row_ptr_.as<int>(), col_ind_.as<int>(), info_),
        "cusolverSpXcsrcholAnalysis"));
    work_bytes_ = 0;
    analyzed_ = true;
    return absl::OkStatus();
  }

  absl::Status Factorize(const CsrPattern& pattern,
                         absl::Span<const Scalar> values) override {
    factorized_ = ok_ = false;
    QD_RETURN_IF_ERROR(CheckFactorizeInput(name_, analyzed_, indptr_, indices_,
                                           pattern, values.size()));
    std::vector<Scalar> reordered(source_.size());
    for (size_t k = 0; k < source_.size(); ++k)
      reordered[k] = values[source_[k]];
    QD_RETURN_IF_ERROR(driver_->MakeCurrent());
    QD_RETURN_IF_ERROR(
        values_.CopyFromHost(reordered.data(), nnz_ * sizeof(Scalar)));
    const int n = static_cast<int>(n_);
    if (work_bytes_ == 0) {
      size_t internal = 0, workspace = 0;
      QD_RETURN_IF_ERROR(
          CusolverLibrary::CheckSolver(BufferInfo(n, &internal, &workspace),
                                       "cusolverSpXcsrcholBufferInfo"));
      QD_RETURN_IF_ERROR(work_.Allocate(driver_, workspace));
      work_bytes_ = std::max<size_t>(workspace, 1);
    }
    QD_RETURN_IF_ERROR(
        CusolverLibrary::CheckSolver(Factor(n), "cusolverSpXcsrcholFactor"));
    int position = -1;
    QD_RETURN_IF_ERROR(CusolverLibrary::CheckSolver(
        ZeroPivot(&position), "cusolverSpXcsrcholZeroPivot"));
    factorized_ = true;
    // A negative pivot leaves a NaN, not a zero, in L: a solve shows it.
    bool finite = position < 0;
    if (finite) {
      std::vector<Scalar> ones(n_, Scalar(1)), x(n_);
      QD_RETURN_IF_ERROR(Solve(ones, absl::MakeSpan(x), false));
      finite = std::all_of(x.begin(), x.end(),
                           [](Scalar v) { return std::isfinite(v); });
    }
    if (!finite) {
      factorized_ = false;
      return MakeError(
          ErrorKind::kRuntime,
          absl::StrCat(name_, ": the factorization of the ", n_, " x ", n_,
                       " matrix failed: it is singular or not symmetric "
                       "positive definite",
                       position >= 0 ? absl::StrCat(" (zero pivot in row ",
                                                    order_host_[position], ")")
                                     : ""));
    }
    ok_ = true;
    return absl::OkStatus();
  }

  absl::Status Solve(absl::Span<const Scalar> b, absl::Span<Scalar> x,
                     bool /*transposed*/) override {
    QD_RETURN_IF_ERROR(CheckSolvable());
    if (static_cast<int64_t>(b.size()) != n_ ||
        static_cast<int64_t>(x.size()) != n_) {
      return MakeError(
          ErrorKind::kType,
          absl::StrCat(name_, ": the right-hand side has ", b.size(),
                       " values; the matrix has ", n_, " rows"));
    }
    QD_RETURN_IF_ERROR(driver_->MakeCurrent());
    QD_RETURN_IF_ERROR(b_.CopyFromHost(b.data(), n_ * sizeof(Scalar)));
    QD_RETURN_IF_ERROR(Permuted(reinterpret_cast<uint64_t>(b_.get()),
                                reinterpret_cast<uint64_t>(x_.get())));
    return x_.CopyToHost(x.data(), n_ * sizeof(Scalar));
  }

  absl::Status SolveOnDevice(uint64_t b, uint64_t x) override {
    QD_RETURN_IF_ERROR(CheckSolvable());
    QD_RETURN_IF_ERROR(driver_->MakeCurrent());
    return Permuted(b, x);
  }

  bool ok() const override { return ok_; }

 private:
  template <typename T>
  absl::Status Upload(DeviceBuffer& buffer, const std::vector<T>& host) {
    QD_RETURN_IF_ERROR(buffer.Allocate(driver_, host.size() * sizeof(T)));
    return buffer.CopyFromHost(host.data(), host.size() * sizeof(T));
  }

  absl::Status CheckSolvable() const {
    if (factorized_)
      return absl::OkStatus();
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat(name_,
                                  ": solve() needs a successful factorize() "
                                  "(or compute()) first"));
  }

  // x = A^-1 b: B z = b(order), then x(order) = z.
  absl::Status Permuted(uint64_t b, uint64_t x) {
    const int type = kDouble ? kCudaR64F : kCudaR32F;
    CusparseDnVec dense_b = nullptr, dense_x = nullptr;
    CusparseSpVec gathered = nullptr, solved = nullptr;
    absl::Status status = CusolverLibrary::CheckSparse(
        lib_->create_dn_vec(&dense_b, n_, reinterpret_cast<void*>(b), type),
        "cusparseCreateDnVec");
    if (status.ok()) {
      status = CusolverLibrary::CheckSparse(
          lib_->create_dn_vec(&dense_x, n_, reinterpret_cast<void*>(x), type),
          "cusparseCreateDnVec");
    }
    for (auto [vector, values] : {std::pair{&gathered, &permuted_b_},
                                  std::pair{&solved, &permuted_x_}}) {
      if (status.ok()) {
        status = CusolverLibrary::CheckSparse(
            lib_->create_sp_vec(vector, n_, n_, order_.get(), values->get(),
                                kCusparseIndex32I, kCusparseIndexBaseZero,
                                type),
            "cusparseCreateSpVec");
      }
    }
    if (status.ok()) {
      status = CusolverLibrary::CheckSparse(
          lib_->gather(sparse_, dense_b, gathered), "cusparseGather");
    }
    if (status.ok()) {
      status = CusolverLibrary::CheckSolver(SolveReordered(),
                                            "cusolverSpXcsrcholSolve");
    }
    if (status.ok()) {
      status = CusolverLibrary::CheckSparse(
          lib_->scatter(sparse_, solved, dense_x), "cusparseScatter");
    }
    for (CusparseSpVec vector : {gathered, solved}) {
      if (vector != nullptr)
        lib_->destroy_sp_vec(vector);
    }
    for (CusparseDnVec vector : {dense_b, dense_x}) {
      if (vector != nullptr)
        lib_->destroy_dn_vec(vector);
    }
    return status;
  }

  int BufferInfo(int n, size_t* internal, size_t* workspace) {
    if constexpr (kDouble) {
      return lib_->d_chol_buffer_info(
          solver_, n, nnz_, descr_, values_.as<double>(), row_ptr_.as<int>(),
          col_ind_.as<int>(), info_, internal, workspace);
    } else {
      return lib_->s_chol_buffer_info(
          solver_, n, nnz_, descr_, values_.as<float>(), row_ptr_.as<int>(),
          col_ind_.as<int>(), info_, internal, workspace);
    }
  }

  int Factor(int n) {
    if constexpr (kDouble) {
      return lib_->d_chol_factor(solver_, n, nnz_, descr_, values_.as<double>(),
                                 row_ptr_.as<int>(), col_ind_.as<int>(), info_,
                                 work_.get());
    } else {
      return lib_->s_chol_factor(solver_, n, nnz_, descr_, values_.as<float>(),
                                 row_ptr_.as<int>(), col_ind_.as<int>(), info_,
                                 work_.get());
    }
  }

  // Positions whose pivot is exactly zero, as Eigen's LLT refuses them.
  int ZeroPivot(int* position) {
    if constexpr (kDouble)
      return lib_->d_chol_zero_pivot(solver_, info_, 0.0, position);
    else
      return lib_->s_chol_zero_pivot(solver_, info_, 0.0f, position);
  }

  int SolveReordered() {
    const int n = static_cast<int>(n_);
    if constexpr (kDouble) {
      return lib_->d_chol_solve(solver_, n, permuted_b_.as<double>(),
                                permuted_x_.as<double>(), info_, work_.get());
    } else {
      return lib_->s_chol_solve(solver_, n, permuted_b_.as<float>(),
                                permuted_x_.as<float>(), info_, work_.get());
    }
  }

  std::shared_ptr<CudaDriver> driver_;
  const CusolverLibrary* lib_;
  FillOrdering ordering_;
  std::string name_;
  CusparseHandle sparse_ = nullptr;
  CusolverSpHandle solver_ = nullptr;
  CusparseMatDescr descr_ = nullptr;
  CsrcholInfo info_ = nullptr;
  // B's pattern and values, the ordering, the workspace, and the reordered
  // and host-staged right-hand side and solution.
  DeviceBuffer row_ptr_, col_ind_, values_, order_, work_;
  DeviceBuffer permuted_b_, permuted_x_, b_, x_;
  size_t work_bytes_ = 0;
  std::vector<int64_t> source_, indptr_, indices_;
  std::vector<int> order_host_;
  int64_t n_ = 0;
  int nnz_ = 0;
  bool analyzed_ = false, factorized_ = false, ok_ = false;
};

}  // namespace

template <typename Scalar>
absl::StatusOr<std::unique_ptr<CudaSparseCholesky<Scalar>>>
CudaSparseCholesky<Scalar>::Create(FillOrdering ordering, int device_id) {
  QD_ASSIGN_OR_RETURN(std::shared_ptr<CudaDriver> driver,
                      CudaDriver::Shared(device_id));
  QD_ASSIGN_OR_RETURN(const CusolverLibrary* lib, CusolverLibrary::Get());
  auto solver = std::make_unique<CusolverCholesky<Scalar>>(std::move(driver),
                                                           lib, ordering);
  QD_RETURN_IF_ERROR(solver->Init());
  return solver;
}

template class CudaSparseCholesky<float>;
template class CudaSparseCholesky<double>;

}  // namespace quadrants::linalg::cuda
