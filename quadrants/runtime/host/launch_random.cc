#include "quadrants/runtime/host/launch_random.h"

#include "quadrants/device_runtime/runtime_abi.h"

namespace quadrants::host {

uint64_t LaunchRandomKey(int64_t seed, uint64_t launch) {
  return qd_mix64(qd_mix64(static_cast<uint64_t>(seed)) +
                  launch * QD_RANDOM_GAMMA);
}

}  // namespace quadrants::host
