#ifndef QUADRANTS_COMMON_ERRORS_H_
#define QUADRANTS_COMMON_ERRORS_H_

#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "quadrants/common/source_location.h"

namespace quadrants {

// The error kinds the Python API exposes; each maps one-to-one to an
// exception class (qd.QuadrantsCompilationError and friends).
enum class ErrorKind {
  kCompilation,  // QuadrantsCompilationError
  kSyntax,       // QuadrantsSyntaxError
  kType,         // QuadrantsTypeError
  kAssertion,    // QuadrantsAssertionError
  kRuntime,      // QuadrantsRuntimeError
  kUnavailable,  // QuadrantsRuntimeError: backend or device missing
  // QuadrantsGlobalDataAccessError: a differentiated kernel overwrites an
  // element it read (a compilation error and, as upstream reports it under
  // Tape validation, an assertion error).
  kGlobalDataAccess,
  // QuadrantsGradientError: a kernel or value that cannot take part in
  // autodiff as asked (both a type and a runtime error, as upstream).
  kGradient,
};

absl::string_view ErrorKindName(ErrorKind kind);

// Library boundaries return absl::Status; the kind travels as a payload so
// the Python layer can raise the documented exception type.
absl::Status MakeError(ErrorKind kind, absl::string_view message);
absl::Status MakeError(ErrorKind kind, const SourceLocation& where,
                       absl::string_view message);

// The kind carried by `status`; statuses made elsewhere map by their code.
ErrorKind GetErrorKind(const absl::Status& status);

// The exception form, for code paths where unwinding is the natural shape
// (deep inside a visitor). Caught at the library boundary and turned back
// into a Status with ToStatus().
class QuadrantsError : public std::runtime_error {
 public:
  QuadrantsError(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  absl::Status ToStatus() const { return MakeError(kind_, what()); }

 private:
  ErrorKind kind_;
};

// Throws the QuadrantsError form of a non-OK status.
void ThrowIfError(const absl::Status& status);

}  // namespace quadrants

#endif  // QUADRANTS_COMMON_ERRORS_H_
