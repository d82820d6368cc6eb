#ifndef QUADRANTS_IR_OP_KINDS_H_
#define QUADRANTS_IR_OP_KINDS_H_

#include "absl/strings/string_view.h"

namespace quadrants::ir {

#define QD_FOR_EACH_UNARY_OP(X)       \
  X(kNeg, "neg")                      \
  X(kBitNot, "bit_not")               \
  X(kLogicalNot, "logical_not")       \
  X(kCast, "cast")                    \
  X(kAbs, "abs")                      \
  X(kSqrt, "sqrt")                    \
  X(kRsqrt, "rsqrt")                  \
  X(kSin, "sin")                      \
  X(kCos, "cos")                      \
  X(kTan, "tan")                      \
  X(kTanh, "tanh")                    \
  X(kExp, "exp")                      \
  X(kLog, "log")                      \
  X(kAsin, "asin")                    \
  X(kAcos, "acos")                    \
  X(kFloor, "floor")                  \
  X(kCeil, "ceil")                    \
  X(kStopGrad, "stop_grad")           \
  X(kRound, "round")                  \
  X(kClz, "clz")                      \
  X(kPopcnt, "popcnt")                \
  X(kFfs, "ffs")                      \
  X(kBitCast, "bit_cast")             \
  X(kFrexpMantissa, "frexp_mantissa") \
  X(kFrexpExponent, "frexp_exponent")

#define QD_FOR_EACH_BINARY_OP(X) \
  X(kAdd, "add")                 \
  X(kSub, "sub")                 \
  X(kMul, "mul")                 \
  X(kDiv, "div")                 \
  X(kFloorDiv, "floordiv")       \
  X(kMod, "mod")                 \
  X(kPow, "pow")                 \
  X(kMin, "min")                 \
  X(kMax, "max")                 \
  X(kAtan2, "atan2")             \
  X(kBitAnd, "bit_and")          \
  X(kBitOr, "bit_or")            \
  X(kBitXor, "bit_xor")          \
  X(kShl, "shl")                 \
  X(kShr, "shr")                 \
  X(kLt, "cmp_lt")               \
  X(kLe, "cmp_le")               \
  X(kGt, "cmp_gt")               \
  X(kGe, "cmp_ge")               \
  X(kEq, "cmp_eq")               \
  X(kNe, "cmp_ne")               \
  X(kLogicalAnd, "logical_and")  \
  X(kLogicalOr, "logical_or")

#define QD_FOR_EACH_ATOMIC_OP(X)  \
  X(kAdd, "atomic_add")           \
  X(kSub, "atomic_sub")           \
  X(kMin, "atomic_min")           \
  X(kMax, "atomic_max")           \
  X(kBitAnd, "atomic_and")        \
  X(kBitOr, "atomic_or")          \
  X(kBitXor, "atomic_xor")        \
  X(kMul, "atomic_mul")           \
  X(kExchange, "atomic_exchange") \
  X(kCas, "atomic_cas")

// qd.simt's block, subgroup and warp primitives: (name, text, operands).
// Subgroup operations act on the running thread's subgroup (a CUDA warp,
// an AMDGPU wavefront, a SPIR-V subgroup); warp operations are CUDA's,
// with an explicit u32 lane mask first.
#define QD_FOR_EACH_SIMT_OP(X)                                 \
  X(kBlockSync, "block_sync", 0)                               \
  X(kBlockSyncAnd, "block_sync_and", 1)                        \
  X(kBlockSyncOr, "block_sync_or", 1)                          \
  X(kBlockSyncCount, "block_sync_count", 1)                    \
  X(kBlockMemFence, "block_mem_fence", 0)                      \
  X(kGridMemFence, "grid_mem_fence", 0)                        \
  X(kBlockThreadIdx, "block_thread_idx", 0)                    \
  X(kSubgroupSync, "subgroup_sync", 0)                         \
  X(kSubgroupMemFence, "subgroup_mem_fence", 0)                \
  X(kSubgroupInvocationId, "subgroup_invocation_id", 0)        \
  X(kSubgroupShuffle, "subgroup_shuffle", 2)                   \
  X(kSubgroupShuffleXor, "subgroup_shuffle_xor", 2)            \
  X(kSubgroupShuffleUp, "subgroup_shuffle_up", 2)              \
  X(kSubgroupShuffleDown, "subgroup_shuffle_down", 2)          \
  X(kSubgroupBroadcast, "subgroup_broadcast", 2)               \
  X(kSubgroupBroadcastFirst, "subgroup_broadcast_first", 1)    \
  X(kSubgroupElect, "subgroup_elect", 0)                       \
  X(kSubgroupBallot, "subgroup_ballot", 1)                     \
  X(kSubgroupAll, "subgroup_all", 1)                           \
  X(kSubgroupAny, "subgroup_any", 1)                           \
  X(kSubgroupAllEqual, "subgroup_all_equal", 1)                \
  X(kWarpShuffle, "warp_shfl", 3)                              \
  X(kWarpShuffleUp, "warp_shfl_up", 3)                         \
  X(kWarpShuffleDown, "warp_shfl_down", 3)                     \
  X(kWarpShuffleXor, "warp_shfl_xor", 3)                       \
  X(kWarpAll, "warp_all", 2)                                   \
  X(kWarpAny, "warp_any", 2)                                   \
  X(kWarpUnique, "warp_unique", 2)                             \
  X(kWarpBallot, "warp_ballot", 2)                             \
  X(kWarpMatchAny, "warp_match_any", 2)                        \
  X(kWarpMatchAll, "warp_match_all", 2)                        \
  X(kWarpActiveMask, "warp_active_mask", 0)                    \
  X(kWarpSync, "warp_sync", 1)

#define QD_DECLARE_ENUMERATOR(name, text) name,
#define QD_DECLARE_SIMT_ENUMERATOR(name, text, operands) name,

enum class UnaryOpKind { QD_FOR_EACH_UNARY_OP(QD_DECLARE_ENUMERATOR) };
enum class BinaryOpKind { QD_FOR_EACH_BINARY_OP(QD_DECLARE_ENUMERATOR) };
enum class AtomicOpKind { QD_FOR_EACH_ATOMIC_OP(QD_DECLARE_ENUMERATOR) };
enum class SimtOpKind { QD_FOR_EACH_SIMT_OP(QD_DECLARE_SIMT_ENUMERATOR) };

#undef QD_DECLARE_ENUMERATOR
#undef QD_DECLARE_SIMT_ENUMERATOR

absl::string_view OpName(UnaryOpKind op);
absl::string_view OpName(BinaryOpKind op);
absl::string_view OpName(AtomicOpKind op);
absl::string_view OpName(SimtOpKind op);
// How many operands the primitive takes.
int OperandCount(SimtOpKind op);
// The primitive named `text` (OpName's spelling), if any.
bool ParseSimtOp(absl::string_view text, SimtOpKind* op);

// Comparisons produce u1 whatever their operand type.
bool IsComparison(BinaryOpKind op);
// Ops defined on integers only (bitwise, shifts).
bool IsIntegerOnly(BinaryOpKind op);
bool IsLogical(BinaryOpKind op);
// sqrt, sin, exp, ...: integer operands are converted to the default float.
bool IsFloatMath(UnaryOpKind op);
// clz, popcnt, ffs: an integer operand's bit pattern, counted into an i32.
bool IsBitCount(UnaryOpKind op);
// Ops whose result type is fixed when the statement is built (the cast
// target) rather than derived by type checking.
bool HasExplicitType(UnaryOpKind op);

// How an offloaded task runs: once (serial), or in parallel over a range of
// indices or over the cells of a field.
enum class TaskKind { kSerial, kRangeFor, kStructFor };
absl::string_view TaskKindName(TaskKind kind);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_OP_KINDS_H_
