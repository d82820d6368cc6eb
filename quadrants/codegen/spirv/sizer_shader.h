#ifndef QUADRANTS_CODEGEN_SPIRV_SIZER_SHADER_H_
#define QUADRANTS_CODEGEN_SPIRV_SIZER_SHADER_H_

#include <cstdint>
#include <vector>

// The on-device adstack sizer: one compute shader, the same for every task,
// that interprets a task's sizer bytecode (sizer_bytecode.h) in a single
// invocation and writes each stack's capacity and per-invocation offset into
// the task's adstack record (shader_abi.h), and the heap strides and its
// outcome into a status block.
//
// Its push constant (the 8 bytes every pipeline has) is the address of a
// job block, laid out below; field elements are read from the runtime
// record's root buffer, scalar arguments and ndarrays through the launch
// context, as generated kernels reach them.
namespace quadrants::codegen::spirv::sizer {

// The job block.
constexpr uint32_t kJobContext = 0;  // u64: the launch context
constexpr uint32_t kJobRecord = 8;   // u64: the task's adstack record
constexpr uint32_t kJobStatus = 16;  // u64: the status block
constexpr uint32_t kJobCode = 24;    // u64: the bytecode (i64 words)
constexpr uint32_t kJobBytes = 32;

// The status block.
constexpr uint32_t kStatusOutcome = 0;      // i64, one of Outcome
constexpr uint32_t kStatusFloatStride = 8;  // i64: bytes per invocation
constexpr uint32_t kStatusIntStride = 16;   // i64
constexpr uint32_t kStatusIterations = 24;  // i64: range iterations walked
constexpr uint32_t kStatusStack = 32;       // i64: the stack it stopped at
constexpr uint32_t kStatusBytes = 40;

enum Outcome : int64_t {
  kNotRun = 0,
  kDone = 1,
  // The MaxOverRange walks need more than kMaxIterations iterations; the
  // record is incomplete.
  kGuardHit = 2,
  // The interpreter loop ended before the program did (a device that bounds
  // loop trips); the record is incomplete.
  kCutShort = 3,
};

std::vector<uint32_t> BuildSizerShader();

}  // namespace quadrants::codegen::spirv::sizer

#endif  // QUADRANTS_CODEGEN_SPIRV_SIZER_SHADER_H_
