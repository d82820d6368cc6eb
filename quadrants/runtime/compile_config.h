#ifndef QUADRANTS_RUNTIME_COMPILE_CONFIG_H_
#define QUADRANTS_RUNTIME_COMPILE_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "quadrants/ir/types.h"

namespace quadrants {

enum class Arch { kCpu, kCuda, kAmdgpu, kVulkan, kMetal };

absl::string_view ArchName(Arch arch);
absl::StatusOr<Arch> ParseArch(absl::string_view name);

// Options of qd.init() that the C++ core acts on. Their names, defaults and
// checks are declared in quadrants/common/options.def; the defaults here
// agree with it (tests/cpp/common/options_test.cc), except that a config
// built in C++ keeps no offline cache unless asked.
struct CompileConfig {
  Arch arch = Arch::kCpu;
  bool debug = false;
  bool check_out_of_bound = false;
  ir::PrimitiveType default_fp = ir::PrimitiveType::kF32;
  ir::PrimitiveType default_ip = ir::PrimitiveType::kI32;
  int cpu_max_num_threads = 0;  // 0: one per hardware thread
  // The CPU backend lets LLVM's loop and SLP vectorizers put iterations in
  // SIMD lanes; false keeps every task scalar.
  bool cpu_simd = true;
  bool print_ir = false;
  bool ad_stack_experimental_enabled = false;
  int64_t ad_stack_size = 0;  // > 0 forces every adstack to this capacity
  int64_t default_ad_stack_size = 256;
  // Bytes the adstack heap of one launch may take; 0: the backend's
  // default (see AdStackBudget). Run-time only.
  int64_t ad_stack_max_bytes = 0;
  // > 0: every checkpointable loop runs in segments of this many
  // iterations. Run-time only.
  int64_t ad_stack_segment_length = 0;
  // A task whose adstacks are used only under a gate (ir::AdStackGate)
  // sizes its heap by the gate-passing elements when its per-thread heap
  // would exceed this many bytes; 0: whenever it can. Run-time only.
  int64_t ad_stack_sparse_threshold_bytes = 100 * 1024 * 1024;
  // Compiled kernels are stored on disk and reused by later processes.
  bool offline_cache = false;
  std::string offline_cache_file_path;  // empty: the default directory
  // Seeds qd.random(); run-time only, so it changes no generated code.
  int64_t random_seed = 0;
  // GPU memory the runtime may take for its own buffers (the adstack heap):
  // this many GiB when > 0, else this fraction of the device when > 0,
  // else half the device. Run-time only.
  double device_memory_GB = 0;
  double device_memory_fraction = 0;
  double sparse_pool_mb = 1024;
  // The GPU to run on, by the driver's numbering. Run-time only.
  int device_id = 0;

  // Out-of-bound checks are on when asked for or in debug mode.
  bool checks_bounds() const { return check_out_of_bound || debug; }
  // A hash of every option that changes generated code (compile cache key).
  uint64_t CodegenHash() const;
};

}  // namespace quadrants

#endif  // QUADRANTS_RUNTIME_COMPILE_CONFIG_H_
