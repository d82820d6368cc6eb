#include "quadrants/common/dynamic_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "quadrants/common/errors.h"

namespace quadrants {

absl::StatusOr<std::unique_ptr<DynamicLibrary>> DynamicLibrary::Open(
    std::initializer_list<const char*> names) {
  std::string reasons;
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      return std::make_unique<DynamicLibrary>(Key(), handle, name);
    }
    const char* reason = dlerror();
    absl::StrAppend(&reasons, reasons.empty() ? "" : "; ",
                    reason ? reason : name);
  }
  return MakeError(ErrorKind::kUnavailable,
                   absl::StrCat("cannot load ", absl::StrJoin(names, " or "),
                                ": ", reasons));
}

DynamicLibrary::~DynamicLibrary() {
  dlclose(handle_);
}

absl::StatusOr<void*> DynamicLibrary::Symbol(absl::string_view symbol) const {
  std::string name(symbol);
  dlerror();
  void* address = dlsym(handle_, name.c_str());
  if (address == nullptr) {
    return MakeError(ErrorKind::kUnavailable,
                     absl::StrCat(name_, " has no symbol ", name));
  }
  return address;
}

}  // namespace quadrants
