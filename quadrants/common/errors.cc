#include "quadrants/common/errors.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace quadrants {
namespace {

constexpr absl::string_view kKindPayloadUrl = "quadrants.dev/error-kind";

absl::StatusCode CodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCompilation:
    case ErrorKind::kSyntax:
    case ErrorKind::kType:
    case ErrorKind::kGlobalDataAccess:
    case ErrorKind::kGradient:
      return absl::StatusCode::kInvalidArgument;
    case ErrorKind::kAssertion:
      return absl::StatusCode::kFailedPrecondition;
    case ErrorKind::kRuntime:
      return absl::StatusCode::kInternal;
    case ErrorKind::kUnavailable:
      return absl::StatusCode::kUnavailable;
  }
  return absl::StatusCode::kUnknown;
}

}  // namespace

absl::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCompilation:
      return "QuadrantsCompilationError";
    case ErrorKind::kSyntax:
      return "QuadrantsSyntaxError";
    case ErrorKind::kType:
      return "QuadrantsTypeError";
    case ErrorKind::kAssertion:
      return "QuadrantsAssertionError";
    case ErrorKind::kRuntime:
      return "QuadrantsRuntimeError";
    case ErrorKind::kUnavailable:
      return "QuadrantsUnavailableError";
    case ErrorKind::kGlobalDataAccess:
      return "QuadrantsGlobalDataAccessError";
    case ErrorKind::kGradient:
      return "QuadrantsGradientError";
  }
  return "QuadrantsError";
}

absl::Status MakeError(ErrorKind kind, absl::string_view message) {
  absl::Status status(CodeFor(kind), message);
  status.SetPayload(kKindPayloadUrl,
                    absl::Cord(std::to_string(static_cast<int>(kind))));
  return status;
}

absl::Status MakeError(ErrorKind kind, const SourceLocation& where,
                       absl::string_view message) {
  return MakeError(kind, absl::StrCat(where.ToString(), ": ", message));
}

ErrorKind GetErrorKind(const absl::Status& status) {
  if (absl::optional<absl::Cord> payload = status.GetPayload(kKindPayloadUrl)) {
    int value = std::stoi(std::string(*payload));
    if (value >= 0 && value <= static_cast<int>(ErrorKind::kGradient)) {
      return static_cast<ErrorKind>(value);
    }
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return ErrorKind::kCompilation;
    case absl::StatusCode::kUnavailable:
      return ErrorKind::kUnavailable;
    default:
      return ErrorKind::kRuntime;
  }
}

void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) {
    throw QuadrantsError(GetErrorKind(status), std::string(status.message()));
  }
}

}  // namespace quadrants
