#ifndef QUADRANTS_RUNTIME_OFFLINE_CACHE_LAUNCH_FACTS_CODEC_H_
#define QUADRANTS_RUNTIME_OFFLINE_CACHE_LAUNCH_FACTS_CODEC_H_

#include "absl/status/statusor.h"
#include "quadrants/artifact/compiled_kernel_data.h"
#include "quadrants/runtime/offline_cache/compiled_kernel_data.pb.h"

namespace quadrants::offline_cache {

// A kernel's launch facts in an entry, and back. Decoding validates every
// enum, so a corrupt entry is rejected rather than launched.
void EncodeLaunchFacts(const LaunchFacts& facts, proto::LaunchFacts* out);
absl::StatusOr<LaunchFacts> DecodeLaunchFacts(const proto::LaunchFacts& in);

}  // namespace quadrants::offline_cache

#endif  // QUADRANTS_RUNTIME_OFFLINE_CACHE_LAUNCH_FACTS_CODEC_H_
