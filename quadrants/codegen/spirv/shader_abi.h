#ifndef QUADRANTS_CODEGEN_SPIRV_SHADER_ABI_H_
#define QUADRANTS_CODEGEN_SPIRV_SHADER_ABI_H_

#include <cstdint>

// The memory the host shares with SPIR-V kernels, reached through buffer
// device addresses: generated code and the Vulkan runtime both read these
// offsets, so this header is the single source of the layout.
namespace quadrants::codegen::spirv::abi {

// Push constants of every pipeline: the launch context's address.
constexpr uint32_t kPushConstantBytes = 8;

// The launch context (one per launch).
constexpr uint32_t kMaxArgs = 64;
constexpr uint32_t kMaxNdim = 12;  // ir::kMaxAxes
constexpr uint32_t kCtxRuntime = 0;     // u64: the runtime record
constexpr uint32_t kCtxRandomKey = 8;   // u64: this launch's random key
constexpr uint32_t kCtxBounds = 16;     // u64: per-task range records
constexpr uint32_t kCtxMaxGroups = 24;  // u64: workgroups per dispatch, at most
constexpr uint32_t kCtxArgs = 32;       // u64[kMaxArgs]: scalar slots
constexpr uint32_t kCtxNdarrayData = kCtxArgs + 8 * kMaxArgs;  // u64[]
constexpr uint32_t kCtxNdarrayShape =
    kCtxNdarrayData + 8 * kMaxArgs;  // i64[kMaxArgs][kMaxNdim]
constexpr uint32_t kCtxAdStack =
    kCtxNdarrayShape + 8 * kMaxArgs * kMaxNdim;  // u64: adstack records
constexpr uint32_t kCtxBytes = kCtxAdStack + 8;

// The adstack records of a launch, one per task with stacks, consecutive
// in task order (a task without stacks has none): a header, then two u64
// words per stack. A stack's slots live in the float heap (f32/f64 values,
// (primal, adjoint) per slot when the kernel reads adjoints) or the int
// heap (integers, bool widened to i32), interleaved per invocation: with T
// the invocations the heap is laid out for and u the element's bytes,
// element e of invocation g of a stack at per-invocation offset o lies at
// heap + o * T + u * g + e * u * T, so invocations pushing together write
// consecutive elements.
constexpr uint32_t kAdFloatHeap = 0;  // u64: float heap address
constexpr uint32_t kAdIntHeap = 8;    // u64: int heap address
// u64: T; invocations from T on idle (their iterations go to the others).
constexpr uint32_t kAdInvocations = 16;
// u64: R > 0 when the heaps hold R rows, one per iteration that passes the
// task's adstack gate (each claims one from the u32 counter at
// kAdRowsClaimed, which the host zeroes), laid out as above with R in
// place of T and the row in place of g; 0: one slice per invocation.
constexpr uint32_t kAdRows = 24;
constexpr uint32_t kAdRowsClaimed = 32;
constexpr uint32_t kAdHeaderBytes = 40;
constexpr uint32_t kAdStackOffset = 0;    // u64: o, bytes
constexpr uint32_t kAdStackCapacity = 8;  // u64: slots
constexpr uint32_t kAdStackBytes = 16;
constexpr uint32_t AdRecordBytes(uint32_t stacks) {
  return kAdHeaderBytes + kAdStackBytes * stacks;
}

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
// u32: the largest (task << 16) + stack + 1 of a push past capacity this
// launch (an atomic maximum, so any number of overflowing invocations
// leave one record); 0 when none overflowed.
constexpr uint32_t kRtAdStackOverflow = 60;
constexpr uint32_t kRtScratch = 64;  // 64 bytes for failed checks
constexpr uint32_t kRtLocks = 128;   // u32[kNumLocks] spin locks
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

}  // namespace quadrants::codegen::spirv::abi

#endif  // QUADRANTS_CODEGEN_SPIRV_SHADER_ABI_H_
