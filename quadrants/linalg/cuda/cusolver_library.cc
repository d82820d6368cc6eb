#include "quadrants/linalg/cuda/cusolver_library.h"

#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::linalg::cuda {
namespace {

absl::Status Missing(absl::string_view library, const absl::Status& why) {
  return MakeError(
      ErrorKind::kUnavailable,
      absl::StrCat(library,
                   " could not be loaded, and a SparseSolver(\"LLT\") on "
                   "CUDA factorizes with it: ",
                   why.message(),
                   ". Install the CUDA toolkit's math libraries (or the pip "
                   "packages nvidia-cusolver and nvidia-cusparse) where the "
                   "dynamic loader finds them, e.g. on LD_LIBRARY_PATH"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CusolverLibrary>> CusolverLibrary::Open(
    std::initializer_list<const char*> cusparse_names,
    std::initializer_list<const char*> cusolver_names) {
  std::unique_ptr<CusolverLibrary> library(new CusolverLibrary());
  absl::StatusOr<std::unique_ptr<DynamicLibrary>> cusparse =
      DynamicLibrary::Open(cusparse_names);
  if (!cusparse.ok())
    return Missing("cuSPARSE (libcusparse)", cusparse.status());
  library->cusparse_ = *std::move(cusparse);
  absl::StatusOr<std::unique_ptr<DynamicLibrary>> cusolver =
      DynamicLibrary::Open(cusolver_names);
  if (!cusolver.ok())
    return Missing("cuSOLVER (libcusolver)", cusolver.status());
  library->cusolver_ = *std::move(cusolver);
#define QD_LOAD_CUSPARSE(member, symbol, signature) \
  QD_RETURN_IF_ERROR(library->cusparse_->Load(symbol, &library->member));
#define QD_LOAD_CUSOLVER(member, symbol, signature) \
  QD_RETURN_IF_ERROR(library->cusolver_->Load(symbol, &library->member));
  QD_CUSPARSE_FUNCTIONS(QD_LOAD_CUSPARSE)
  QD_CUSOLVER_FUNCTIONS(QD_LOAD_CUSOLVER)
#undef QD_LOAD_CUSPARSE
#undef QD_LOAD_CUSOLVER
  return library;
}

absl::StatusOr<const CusolverLibrary*> CusolverLibrary::Get() {
  static absl::Mutex mutex(absl::kConstInit);
  static const CusolverLibrary* loaded = nullptr;
  absl::MutexLock lock(&mutex);
  if (loaded == nullptr) {
    QD_ASSIGN_OR_RETURN(
        std::unique_ptr<CusolverLibrary> library,
        Open({"libcusparse.so.12", "libcusparse.so.11", "libcusparse.so"},
             {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"}));
    loaded = library.release();
  }
  return loaded;
}

absl::Status CusolverLibrary::CheckSparse(int status, const char* what) {
  if (status == 0)
    return absl::OkStatus();
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat(what, " failed: cuSPARSE status ", status));
}

absl::Status CusolverLibrary::CheckSolver(int status, const char* what) {
  if (status == 0)
    return absl::OkStatus();
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat(what, " failed: cuSOLVER status ", status));
}

}  // namespace quadrants::linalg::cuda
