#ifndef QUADRANTS_COMMON_DYNAMIC_LIBRARY_H_
#define QUADRANTS_COMMON_DYNAMIC_LIBRARY_H_

#include <initializer_list>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace quadrants {

// A shared library opened with dlopen. Backends load their driver (libcuda,
// libamdhip64, libvulkan) this way so one build runs on every machine and
// reports what is missing instead of failing to start.
class DynamicLibrary {
 public:
  // Tries each name in order; the error lists every name and dlerror().
  static absl::StatusOr<std::unique_ptr<DynamicLibrary>> Open(
      std::initializer_list<const char*> names);

  // Public for std::make_unique only; the Key keeps callers on Open().
  class Key {
    friend class DynamicLibrary;
    Key() = default;
  };
  DynamicLibrary(Key, void* handle, std::string name)
      : handle_(handle), name_(std::move(name)) {}
  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  const std::string& name() const { return name_; }

  absl::StatusOr<void*> Symbol(absl::string_view symbol) const;

  // Loads `symbol` into a typed function pointer.
  template <typename Fn>
  absl::Status Load(absl::string_view symbol, Fn* out) const {
    absl::StatusOr<void*> address = Symbol(symbol);
    if (!address.ok())
      return address.status();
    *out = reinterpret_cast<Fn>(*address);
    return absl::OkStatus();
  }

 private:
  void* handle_;
  std::string name_;
};

}  // namespace quadrants

#endif  // QUADRANTS_COMMON_DYNAMIC_LIBRARY_H_
