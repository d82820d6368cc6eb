#include "quadrants/runtime/backend_registry.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants {

absl::string_view CapabilityName(Capability capability) {
  switch (capability) {
    case Capability::kAdStack:
      return "adstack";
    case Capability::kData64:
      return "data64";
    case Capability::kGraph:
      return "graph";
    case Capability::kDeviceReducer:
      return "device_reducer";
    case Capability::kSparse:
      return "sparse";
    case Capability::kHostMemory:
      return "host_memory";
    case Capability::kDlpack:
      return "dlpack";
  }
  return "?";
}

BackendRegistry& BackendRegistry::Global() {
  // Never destroyed: registrars run during static initialization and
  // programs may still be torn down during static destruction.
  static BackendRegistry* registry = new BackendRegistry();
  return *registry;
}

absl::Status BackendRegistry::Register(BackendRegistration registration) {
  const Arch arch = registration.arch;
  if (!backends_.emplace(arch, std::move(registration)).second) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("the ", ArchName(arch),
                                  " backend is registered twice"));
  }
  return absl::OkStatus();
}

void BackendRegistry::AddWrapper(BackendWrapper wrapper) {
  wrappers_.push_back(std::move(wrapper));
}

std::vector<Arch> BackendRegistry::archs() const {
  std::vector<Arch> result;
  for (const auto& [arch, registration] : backends_)
    result.push_back(arch);
  return result;
}

bool BackendRegistry::IsRegistered(Arch arch) const {
  return backends_.count(arch) > 0;
}

std::string BackendRegistry::ListArchs(absl::string_view prefix) const {
  std::string list;
  const std::vector<Arch> registered = archs();
  for (size_t i = 0; i < registered.size(); ++i) {
    if (i > 0)
      list += i + 1 == registered.size() ? " and " : ", ";
    absl::StrAppend(&list, prefix, ArchName(registered[i]));
  }
  return list;
}

absl::Status BackendRegistry::Probe(Arch arch) const {
  auto it = backends_.find(arch);
  if (it == backends_.end()) {
    return MakeError(
        ErrorKind::kUnavailable,
        absl::StrCat("the ", ArchName(arch),
                     " backend is not available in this build of Quadrants "
                     "(kernels run on ",
                     ListArchs("qd."), ")"));
  }
  if (!it->second.probe)
    return absl::OkStatus();
  return it->second.probe();
}

absl::StatusOr<std::unique_ptr<Backend>> BackendRegistry::Create(
    const CompileConfig& config) const {
  auto it = backends_.find(config.arch);
  if (it == backends_.end()) {
    return MakeError(ErrorKind::kUnavailable,
                     absl::StrCat("arch '", ArchName(config.arch),
                                  "' is not available: this build runs "
                                  "kernels on the ",
                                  ListArchs(""), " archs only"));
  }
  QD_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                      it->second.create(config));
  for (const BackendWrapper& wrap : wrappers_) {
    QD_ASSIGN_OR_RETURN(backend, wrap(config, std::move(backend)));
  }
  return backend;
}

CapabilitySet BackendRegistry::capabilities(Arch arch) const {
  auto it = backends_.find(arch);
  return it == backends_.end() ? CapabilitySet() : it->second.capabilities;
}

int BackendRegistry::dlpack_device_type(Arch arch) const {
  auto it = backends_.find(arch);
  return it == backends_.end() ? 0 : it->second.dlpack_device_type;
}

BackendRegistrar::BackendRegistrar(BackendRegistration registration) {
  absl::Status status =
      BackendRegistry::Global().Register(std::move(registration));
  if (!status.ok()) {
    std::fprintf(stderr, "[quadrants] %s\n",
                 std::string(status.message()).c_str());
    std::abort();
  }
}

BackendWrapperRegistrar::BackendWrapperRegistrar(BackendWrapper wrapper) {
  BackendRegistry::Global().AddWrapper(std::move(wrapper));
}

}  // namespace quadrants
