#include "quadrants/runtime/gpu/driver_library.h"

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants::gpu {

absl::Status AvailableOr(absl::string_view platform,
                         const absl::Status& initialized) {
  if (initialized.ok())
    return initialized;
  return MakeError(
      ErrorKind::kUnavailable,
      absl::StrCat(platform, " not available: ", initialized.message()));
}

absl::Status CallError(const char* what, const char* message,
                       const char* result_type, int result) {
  return MakeError(
      ErrorKind::kRuntime,
      absl::StrCat(what, " failed: ", message ? message : "unknown error", " (",
                   result_type, " ", result, ")"));
}

}  // namespace quadrants::gpu
