#ifndef QUADRANTS_CODEGEN_SPIRV_REDUCER_SHADER_H_
#define QUADRANTS_CODEGEN_SPIRV_REDUCER_SHADER_H_

#include <cstdint>
#include <vector>

// The on-device adstack max-reducer: one compute shader, the same for every
// job, that interprets a max-reducer job's body bytecode over the cross
// product of its axes and combines the maxima into the job's result words.
//
// Its push constant (the 8 bytes every pipeline has) is the address of a
// job block of i64 words, laid out below; reads go through the physical
// addresses the block names. Invocation g of a dispatch of T walks the
// linearized points g, g + T, g + 2T, ... (innermost axis fastest), stepping
// the axis coordinates by T's mixed-radix digits instead of dividing per
// point. Each keeps a running i64 maximum and combines it with 32-bit
// atomics (Metal has no 64-bit ones): an unsigned maximum of the value
// biased by 2^31, and flags.

namespace quadrants::codegen::spirv::reducer {

constexpr int kMaxAxes = 4;  // axes of a job; slot 0 is the innermost
constexpr int kMaxReads = 16;
constexpr int kMaxReadAxes = 4;  // read indices that are axes
constexpr int kMaxCode = 64;     // body instructions
constexpr int kLocalSize = 64;

// The job block, in i64 words.
constexpr int kWordResult = 0;     // u32 biased maximum, then u32 flags
constexpr int kWordCodeCount = 1;  // n instructions, 1 <= n <= kMaxCode
constexpr int kWordPoints = 2;     // N points
constexpr int kWordStride = 3;     // T: the dispatch's invocations
constexpr int kWordCounts = 4;     // per slot: the axis' point count
constexpr int kWordBegins = kWordCounts + kMaxAxes;        // per slot
constexpr int kWordStrideDigits = kWordBegins + kMaxAxes;  // T, mixed radix
// Per read: the element address of the constant indices (0: reads
// nothing), the element type (sizer TypeCode), then per axis index: the
// slot (-1: unused), the extent and the byte stride.
constexpr int kWordReads = kWordStrideDigits + kMaxAxes;
constexpr int kReadWords = 2 + 3 * kMaxReadAxes;
// Per instruction: op, a, b, value (as adstack::BodyInstr; kAxis names a
// slot).
constexpr int kWordCode = kWordReads + kMaxReads * kReadWords;
constexpr int kCodeWords = 4;
// A job whose maximum is that of i32 elements along its only axis (the
// host applies the body's monotone rest): the first element's address (0:
// interpret the body) and the elements' byte stride; kWordPoints counts
// the elements. Invocations then load and compare i32s, nothing else.
constexpr int kWordFastAddress = kWordCode + kMaxCode * kCodeWords;
constexpr int kWordFastStride = kWordFastAddress + 1;
constexpr int kJobWords = kWordFastStride + 1;

enum Op : int64_t {
  kConst = 0,
  kAxis = 1,
  kRead = 2,
  kAdd = 3,
  kSub = 4,
  kMul = 5,
  kMax = 6,
};

// The flags word, from each invocation's maximum: the maximum word holds
// the largest of those that fit in 32 bits; one above them is the job's
// maximum and does not fit, one below matters only when none fits.
constexpr uint32_t kFits = 1;      // some maximum fits in 32 bits
constexpr uint32_t kAbove = 2;     // some maximum is above INT32_MAX
constexpr uint32_t kBelow = 4;     // some maximum is below INT32_MIN
constexpr uint32_t kCutShort = 8;  // the device ended a walk early
// The maximum word holds value + kBias.
constexpr int64_t kBias = int64_t{1} << 31;
// An empty maximum (nothing is smaller).
constexpr int64_t kNone = INT64_MIN;

std::vector<uint32_t> BuildReducerShader();

}  // namespace quadrants::codegen::spirv::reducer

#endif  // QUADRANTS_CODEGEN_SPIRV_REDUCER_SHADER_H_
