#include "quadrants/runtime/backend_registry.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "quadrants/common/errors.h"

namespace quadrants {
namespace {

BackendRegistration Unavailable(Arch arch) {
  return {.arch = arch,
          .create = [](const CompileConfig&)
              -> absl::StatusOr<std::unique_ptr<Backend>> {
            return MakeError(ErrorKind::kUnavailable, "no device");
          },
          .probe = [] {
            return MakeError(ErrorKind::kUnavailable, "no device");
          }};
}

TEST(BackendRegistryTest, EveryLinkedArchIsRegisteredOnce) {
  BackendRegistry& registry = BackendRegistry::Global();
  EXPECT_EQ(registry.archs(), (std::vector<Arch>{Arch::kCpu, Arch::kCuda,
                                                 Arch::kAmdgpu, Arch::kVulkan}));
  for (Arch arch : registry.archs()) {
    absl::Status again = registry.Register(Unavailable(arch));
    EXPECT_FALSE(again.ok()) << ArchName(arch);
    EXPECT_EQ(again.message(),
              absl::StrCat("the ", ArchName(arch), " backend is registered twice"));
  }
}

TEST(BackendRegistryTest, CapabilitiesAreWhatEachBackendImplements) {
  const BackendRegistry& registry = BackendRegistry::Global();
  EXPECT_EQ(registry.capabilities(Arch::kCpu),
            (CapabilitySet{Capability::kAdStack, Capability::kData64,
                           Capability::kSparse, Capability::kHostMemory,
                           Capability::kDlpack}));
  EXPECT_EQ(registry.capabilities(Arch::kCuda),
            (CapabilitySet{Capability::kAdStack, Capability::kData64,
                           Capability::kGraph, Capability::kDeviceReducer,
                           Capability::kSparse, Capability::kDlpack}));
  EXPECT_EQ(registry.capabilities(Arch::kAmdgpu),
            (CapabilitySet{Capability::kAdStack, Capability::kData64,
                           Capability::kDeviceReducer, Capability::kDlpack}));
  EXPECT_EQ(registry.capabilities(Arch::kVulkan),
            (CapabilitySet{Capability::kAdStack, Capability::kData64,
                           Capability::kDeviceReducer}));
  EXPECT_TRUE(registry.capabilities(Arch::kMetal).empty());
}

TEST(BackendRegistryTest, DlpackDeviceTypesNameWhereArraysLive) {
  const BackendRegistry& registry = BackendRegistry::Global();
  EXPECT_EQ(registry.dlpack_device_type(Arch::kCpu), 1);
  EXPECT_EQ(registry.dlpack_device_type(Arch::kCuda), 2);
  EXPECT_EQ(registry.dlpack_device_type(Arch::kAmdgpu), 10);
  EXPECT_EQ(registry.dlpack_device_type(Arch::kVulkan), 0);
  EXPECT_EQ(registry.dlpack_device_type(Arch::kMetal), 0);
  EXPECT_EQ(CapabilityName(Capability::kHostMemory), "host_memory");
  EXPECT_EQ(CapabilityName(Capability::kDlpack), "dlpack");
}

TEST(BackendRegistryTest, CapabilityNamesAreTheExtensionNames) {
  EXPECT_EQ(CapabilityName(Capability::kAdStack), "adstack");
  EXPECT_EQ(CapabilityName(Capability::kData64), "data64");
  EXPECT_EQ(CapabilityName(Capability::kGraph), "graph");
  EXPECT_EQ(CapabilityName(Capability::kDeviceReducer), "device_reducer");
}

TEST(BackendRegistryTest, CpuIsAlwaysAvailableAndCreates) {
  const BackendRegistry& registry = BackendRegistry::Global();
  EXPECT_TRUE(registry.Probe(Arch::kCpu).ok());
  CompileConfig config;
  config.arch = Arch::kCpu;
  absl::StatusOr<std::unique_ptr<Backend>> backend = registry.Create(config);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_NE(*backend, nullptr);
}

TEST(BackendRegistryTest, UnregisteredArchIsUnavailableWithTheLinkedArchs) {
  const BackendRegistry& registry = BackendRegistry::Global();
  absl::Status probed = registry.Probe(Arch::kMetal);
  EXPECT_EQ(GetErrorKind(probed), ErrorKind::kUnavailable);
  EXPECT_EQ(probed.message(),
            "the metal backend is not available in this build of Quadrants "
            "(kernels run on qd.cpu, qd.cuda, qd.amdgpu and qd.vulkan)");
  CompileConfig config;
  config.arch = Arch::kMetal;
  absl::Status created = registry.Create(config).status();
  EXPECT_EQ(GetErrorKind(created), ErrorKind::kUnavailable);
  EXPECT_EQ(created.message(),
            "arch 'metal' is not available: this build runs kernels on the "
            "cpu, cuda, amdgpu and vulkan archs only");
}

TEST(BackendRegistryTest, ErrorsNameOnlyTheArchsRegistered) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.Register({.arch = Arch::kVulkan}).ok());
  ASSERT_TRUE(registry.Register({.arch = Arch::kCpu}).ok());
  EXPECT_EQ(registry.Probe(Arch::kCuda).message(),
            "the cuda backend is not available in this build of Quadrants "
            "(kernels run on qd.cpu and qd.vulkan)");
  CompileConfig config;
  config.arch = Arch::kCuda;
  EXPECT_EQ(registry.Create(config).status().message(),
            "arch 'cuda' is not available: this build runs kernels on the "
            "cpu and vulkan archs only");
}

TEST(BackendRegistryTest, ProbeReportsTheBackendsReason) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.Register(Unavailable(Arch::kCuda)).ok());
  ASSERT_TRUE(registry.Register({.arch = Arch::kCpu}).ok());
  EXPECT_EQ(registry.Probe(Arch::kCuda).message(), "no device");
  EXPECT_TRUE(registry.Probe(Arch::kCpu).ok());  // no probe: available
  CompileConfig config;
  config.arch = Arch::kCuda;
  EXPECT_EQ(registry.Create(config).status().message(), "no device");
}

TEST(BackendRegistryTest, WrappersApplyInOrderToEveryCreatedBackend) {
  BackendRegistry registry;
  std::vector<std::string> calls;
  ASSERT_TRUE(registry
                  .Register({.arch = Arch::kCpu,
                             .create = [&](const CompileConfig&)
                                 -> absl::StatusOr<std::unique_ptr<Backend>> {
                               calls.push_back("create");
                               return std::unique_ptr<Backend>();
                             }})
                  .ok());
  for (std::string name : {"first", "second"}) {
    registry.AddWrapper([&calls, name](const CompileConfig& config,
                                       std::unique_ptr<Backend> backend)
                            -> absl::StatusOr<std::unique_ptr<Backend>> {
      calls.push_back(absl::StrCat(name, ":", ArchName(config.arch)));
      return backend;
    });
  }
  CompileConfig config;
  config.arch = Arch::kCpu;
  ASSERT_TRUE(registry.Create(config).ok());
  EXPECT_EQ(calls,
            (std::vector<std::string>{"create", "first:cpu", "second:cpu"}));
}

TEST(BackendRegistryTest, AWrapperErrorFailsTheCreation) {
  BackendRegistry registry;
  ASSERT_TRUE(registry
                  .Register({.arch = Arch::kCpu,
                             .create = [](const CompileConfig&)
                                 -> absl::StatusOr<std::unique_ptr<Backend>> {
                               return std::unique_ptr<Backend>();
                             }})
                  .ok());
  registry.AddWrapper([](const CompileConfig&, std::unique_ptr<Backend>)
                          -> absl::StatusOr<std::unique_ptr<Backend>> {
    return MakeError(ErrorKind::kCompilation, "unknown gfx target");
  });
  CompileConfig config;
  EXPECT_EQ(registry.Create(config).status().message(), "unknown gfx target");
}

}  // namespace
}  // namespace quadrants
