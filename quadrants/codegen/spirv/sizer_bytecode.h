#ifndef QUADRANTS_CODEGEN_SPIRV_SIZER_BYTECODE_H_
#define QUADRANTS_CODEGEN_SPIRV_SIZER_BYTECODE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/artifact/compiled_kernel_data.h"

// The bytecode the on-device adstack sizer (sizer_shader.h) interprets: the
// launch-time size expressions of one task's stacks as i64 words.
//
// Layout: word 0 is the stack count S; then four words per stack (is_float,
// slot_bytes, code start, capacity floor); then the code. Each stack's code
// is a post-order stack program ending with kEnd; its result (an empty
// maximum when nothing was pushed or the value is kSizerNone) is the
// capacity before the floor and the at-least-one-slot rule of the heap
// layout apply. Reads outside their array push kSizerNone, which every
// operator but kMax propagates, as in the host evaluator.
namespace quadrants::codegen::spirv::sizer {

// An empty maximum (nothing is smaller).
constexpr int64_t kNone = INT64_MIN;
// Serial MaxOverRange iterations of one stack's expression, at most (the
// host evaluator's guard).
constexpr int64_t kMaxIterations = int64_t{1} << 24;
// The shader's evaluation stack and bound-variable slots.
constexpr int kStackDepth = 64;
constexpr int kMaxVars = 8;
constexpr int kMaxAxes = 8;
constexpr int kHeaderWords = 1;
constexpr int kStackWords = 4;
// Zero words after the code: unrolled operand reads of the shader may look
// past a short instruction without leaving the buffer.
constexpr int kPadWords = 2 * kMaxAxes + 4;

enum Op : int64_t {
  kEnd = 0,
  kConst = 1,   // value
  kArg = 2,     // arg: the scalar argument's slot
  kShape = 3,   // arg, axis
  kVar = 4,     // slot
  kField = 5,   // n, type, root offset, (stride, extent) x n; pops n
  kNdRead = 6,  // arg, n, type, valid; pops n
  kLoopIndexMax = 7,
  kAdd = 8,
  kSub = 9,
  kMul = 10,
  kMax = 11,
  kFloorDiv = 12,
  kMod = 13,
  // slot, end of loop: pops end, begin. A null or empty range pushes kNone
  // and jumps past the loop; else pushes end and the running maximum and
  // binds the slot to begin.
  kRangeBegin = 14,
  // slot, body start: pops the body's value into the running maximum and
  // steps the slot, jumping back while it is below the end.
  kRangeNext = 15,
};

// An element type as the shader reads it: bytes | signed << 4 | kind << 8.
enum TypeKind : int64_t { kInt = 0, kBool = 1, kF32 = 2, kZero = 3 };
absl::StatusOr<int64_t> TypeCode(ir::PrimitiveType type);

// The program of `stacks`: a stack with a static capacity or without a
// size expression gets that capacity (or `default_capacity`) as a
// constant; one with a size expression gets at least the two setup slots.
// Unimplemented for what the shader does not read (f64 elements, fields or
// ndarrays of more than kMaxAxes axes, programs deeper than kStackDepth or
// nesting more than kMaxVars ranges), which the host then sizes.
absl::StatusOr<std::vector<int64_t>> EncodeSizer(
    absl::Span<const AdStackSpec> stacks, const ir::SNodeTree& snodes,
    const std::vector<ir::KernelParam>& params, int64_t default_capacity);

// Whether a size expression reads field or ndarray contents (the values
// the host would have to map or wait for).
bool ReadsData(const ir::SizeExpr& expr);

}  // namespace quadrants::codegen::spirv::sizer

#endif  // QUADRANTS_CODEGEN_SPIRV_SIZER_BYTECODE_H_
