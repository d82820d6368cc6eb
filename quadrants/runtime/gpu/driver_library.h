#ifndef QUADRANTS_RUNTIME_GPU_DRIVER_LIBRARY_H_
#define QUADRANTS_RUNTIME_GPU_DRIVER_LIBRARY_H_

#include <initializer_list>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "quadrants/common/dynamic_library.h"
#include "quadrants/common/status_macros.h"

// X(member, symbol) helpers for a driver's table of entry points, each a
// member typed as the header declares `member` and loaded from `symbol`.
#define QD_GPU_DECLARE_ENTRY(member, symbol) \
  decltype(&::member) member = nullptr;
#define QD_GPU_LOAD_ENTRY(member, symbol) \
  QD_RETURN_IF_ERROR(library_->Load(symbol, &member));

namespace quadrants::gpu {

// `initialized`, a driver's start-up status, with a failure turned into the
// Unavailable error "<platform> not available: <reason>".
absl::Status AvailableOr(absl::string_view platform,
                         const absl::Status& initialized);

// A GPU vendor's driver library, loaded with dlopen, and what it says about
// the device it chose.
class DriverLibrary {
 public:
  DriverLibrary(const DriverLibrary&) = delete;
  DriverLibrary& operator=(const DriverLibrary&) = delete;

  const std::string& device_name() const { return device_name_; }
  int driver_version() const { return driver_version_; }

 protected:
  DriverLibrary() = default;
  ~DriverLibrary() = default;

  // A T (which befriends DriverLibrary) whose Initialize opened its library
  // and chose device `device_id`; a failure reads "<platform> not
  // available: ...".
  template <typename T>
  static absl::StatusOr<std::unique_ptr<T>> LoadAs(absl::string_view platform,
                                                   int device_id) {
    std::unique_ptr<T> driver(new T());
    QD_RETURN_IF_ERROR(AvailableOr(platform, driver->Initialize(device_id)));
    return driver;
  }

  std::unique_ptr<DynamicLibrary> library_;
  std::string device_name_;
  int driver_version_ = 0;
};

// The runtime error of a failed driver call:
// "<what> failed: <message> (<result_type> <result>)", where a null
// `message` reads "unknown error".
absl::Status CallError(const char* what, const char* message,
                       const char* result_type, int result);

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_DRIVER_LIBRARY_H_
