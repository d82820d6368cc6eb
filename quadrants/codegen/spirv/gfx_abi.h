#ifndef QUADRANTS_CODEGEN_SPIRV_GFX_ABI_H_
#define QUADRANTS_CODEGEN_SPIRV_GFX_ABI_H_

#include <cstdint>

// The memory the host shares with SPIR-V kernels, reached through buffer
// device addresses: generated code and the Vulkan runtime both read these
// offsets, so this header is the single source of the layout.
namespace quadrants::spirv::abi {

// Push constants of every pipeline: the launch context's address.
constexpr uint32_t kPushConstantBytes = 8;

// The launch context (one per launch).
constexpr uint32_t kMaxArgs = 64;
constexpr uint32_t kMaxNdim = 8;
constexpr uint32_t kCtxRuntime = 0;     // u64: the runtime record
constexpr uint32_t kCtxRandomKey = 8;   // u64: this launch's random key
constexpr uint32_t kCtxBounds = 16;     // u64: per-task range records
constexpr uint32_t kCtxMaxGroups = 24;  // u64: workgroups per dispatch, at most
constexpr uint32_t kCtxArgs = 32;       // u64[kMaxArgs]: scalar slots
constexpr uint32_t kCtxNdarrayData = kCtxArgs + 8 * kMaxArgs;  // u64[]
constexpr uint32_t kCtxNdarrayShape =
    kCtxNdarrayData + 8 * kMaxArgs;  // i64[kMaxArgs][kMaxNdim]
constexpr uint32_t kCtxBytes = kCtxNdarrayShape + 8 * kMaxArgs * kMaxNdim;

// One range record per task: the iteration range a bounds shader computed
// and the indirect dispatch size it chose.
constexpr uint32_t kRangeBegin = 0;      // i64
constexpr uint32_t kRangeEnd = 8;        // i64
constexpr uint32_t kRangeDispatch = 16;  // u32 x, y, z
constexpr uint32_t kRangeBytes = 32;

// The runtime record (one per backend).
constexpr uint32_t kRtRoot = 0;            // u64: the SNode root buffer
constexpr uint32_t kRtPrintBuffer = 8;     // u64
constexpr uint32_t kRtErrorCode = 16;      // u32, first error wins
constexpr uint32_t kRtErrorSite = 20;      // u32
constexpr uint32_t kRtErrorValues = 24;    // i64[3]
constexpr uint32_t kRtPrintCapacity = 48;  // u32 bytes
constexpr uint32_t kRtPrintUsed = 52;      // u32 bytes asked for
constexpr uint32_t kRtPrintDropped = 56;   // u32 records
constexpr uint32_t kRtScratch = 64;        // 64 bytes for failed checks
constexpr uint32_t kRtLocks = 128;         // u32[kNumLocks] spin locks
constexpr uint32_t kNumLocks = 1024;
constexpr uint32_t kRtBytes = kRtLocks + 4 * kNumLocks;

// Error codes (as RuntimeErrorRecord::Code).
constexpr uint32_t kErrorOutOfBound = 1;
constexpr uint32_t kErrorAssertion = 2;

// Threads per workgroup of parallel tasks, and the most workgroups one
// dispatch uses (the rest of a range is covered grid-stride); a device may
// ask for fewer through kCtxMaxGroups.
constexpr uint32_t kBlockSize = 128;
constexpr uint32_t kMaxGroups = 65535;

}  // namespace quadrants::spirv::abi

#endif  // QUADRANTS_CODEGEN_SPIRV_GFX_ABI_H_
