#ifndef QUADRANTS_RUNTIME_HOST_LAUNCH_RANDOM_H_
#define QUADRANTS_RUNTIME_HOST_LAUNCH_RANDOM_H_

#include <cstdint>

namespace quadrants::host {

// The key of launch number `launch` (1, 2, ...) under `seed`: each launch
// draws from fresh qd.random() streams, the same on every backend.
uint64_t LaunchRandomKey(int64_t seed, uint64_t launch);

}  // namespace quadrants::host

#endif  // QUADRANTS_RUNTIME_HOST_LAUNCH_RANDOM_H_
