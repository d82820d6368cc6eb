#ifndef QUADRANTS_RUNTIME_BACKEND_REGISTRY_H_
#define QUADRANTS_RUNTIME_BACKEND_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/compile_config.h"

namespace quadrants {

// What a backend can do, as Python's qd.extension names it.
enum class Capability {
  kAdStack,        // "adstack": dynamic-bound loops differentiate
  kData64,         // "data64": 64-bit fields, ndarrays and scalars (f64)
  kGraph,          // "graph": @qd.kernel(graph=True) replays a graph
  kDeviceReducer,  // "device_reducer": adstack sizing reduces on the device
  kSparse,         // "sparse": pointer, bitmasked and dynamic SNodes
  kHostMemory,     // "host_memory": fields and ndarrays live in host memory
                   // that numpy and torch views share (no copy)
  kDlpack,         // "dlpack": ndarrays export their memory and wrap other
                   // libraries' memory through DLPack
};
absl::string_view CapabilityName(Capability capability);
using CapabilitySet = std::set<Capability>;

using BackendFactory =
    std::function<absl::StatusOr<std::unique_ptr<Backend>>(
        const CompileConfig& config)>;
// OK when kernels can run on the arch here, else the Unavailable error
// saying why.
using BackendProbe = std::function<absl::Status()>;
// Takes every created backend and returns it or one that stands in for it
// (e.g. one that also checks code generation for another target).
using BackendWrapper =
    std::function<absl::StatusOr<std::unique_ptr<Backend>>(
        const CompileConfig& config, std::unique_ptr<Backend> backend)>;

struct BackendRegistration {
  Arch arch = Arch::kCpu;
  BackendFactory create;
  BackendProbe probe;  // unset: always available
  CapabilitySet capabilities;
  // DLPack's device type of the memory fields and ndarrays live in
  // (kDLCPU 1, kDLCUDA 2, kDLROCM 10); 0 where other libraries cannot
  // address it (Vulkan's device-local buffers), so arrays reach kernels
  // from host memory.
  int dlpack_device_type = 0;
};

// The backends linked into this build, each registered by a static
// BackendRegistrar in its runtime package, and the wrappers applied to
// every backend created.
class BackendRegistry {
 public:
  // The process-wide registry that registrars fill.
  static BackendRegistry& Global();

  // An error when `registration.arch` is already registered.
  absl::Status Register(BackendRegistration registration);
  // Wrappers apply in registration order; none may depend on another.
  void AddWrapper(BackendWrapper wrapper);

  // The registered archs, in Arch order.
  std::vector<Arch> archs() const;
  bool IsRegistered(Arch arch) const;
  // OK when kernels can run on `arch` here, else the Unavailable error
  // saying why (an unregistered arch included).
  absl::Status Probe(Arch arch) const;
  // The backend for `config.arch`, wrapped by every wrapper.
  absl::StatusOr<std::unique_ptr<Backend>> Create(
      const CompileConfig& config) const;
  // Empty for an unregistered arch.
  CapabilitySet capabilities(Arch arch) const;
  // See BackendRegistration; 0 for an unregistered arch.
  int dlpack_device_type(Arch arch) const;

 private:
  // "qd.cpu, qd.cuda and qd.vulkan" (with `prefix` "qd.") for the
  // registered archs.
  std::string ListArchs(absl::string_view prefix) const;

  std::map<Arch, BackendRegistration> backends_;  // in Arch order
  std::vector<BackendWrapper> wrappers_;
};

// Registers a backend with the global registry at static initialization;
// a second registration of one arch aborts the process, since the build
// linked two backends for it.
class BackendRegistrar {
 public:
  explicit BackendRegistrar(BackendRegistration registration);
};

// Adds a wrapper to the global registry at static initialization.
class BackendWrapperRegistrar {
 public:
  explicit BackendWrapperRegistrar(BackendWrapper wrapper);
};

}  // namespace quadrants

#endif  // QUADRANTS_RUNTIME_BACKEND_REGISTRY_H_
