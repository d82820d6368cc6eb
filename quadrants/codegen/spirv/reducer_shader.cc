#include "quadrants/codegen/spirv/reducer_shader.h"

#include <cstdint>
#include <utility>

#include "quadrants/codegen/spirv/interpreter_builder.h"

namespace quadrants::codegen::spirv::reducer {
namespace {

// Emits the reducer. Inside an instruction everything is branch-free
// (selects); the control flow is the loop over an invocation's points, the
// loop over the body's instructions and a switch on the opcode.
class ReducerEmitter : public InterpreterBuilder {
 public:
  std::vector<uint32_t> Build();

 private:
  void Setup();
  void PointLoop();
  // The fast walk of kWordFastAddress's i32 elements, or the interpreter.
  void FastOrInterpreted();
  void FastLoop(Id first);
  void Body();
  void Instruction();
  void Step();
  void Combine();
  Id CaseRead(Id read);
  Id CaseBinary(Id op, Id a, Id b);

  // Job word `index` (an i64 id); Header reads a constant one.
  Id JobWord(Id index) {
    return Load(
        i64_, At(job_, Op(spv::OpShiftLeftLogical, i64_, {index, I64(3)})), 8);
  }
  Id Header(int index) { return Load(i64_, Word(job_, 8 * index), 8); }
  Id Coord(Id slot) { return Get(Slot(coords_, slot, kMaxAxes)); }

  Id job_ = 0, code_count_ = 0, points_ = 0, stride_ = 0;
  Id counts_[kMaxAxes] = {}, begins_[kMaxAxes] = {},
     stride_digits_[kMaxAxes] = {};
  Id digits_[kMaxAxes] = {};
  Id coords_ = 0, values_ = 0;
  Id point_ = 0, walked_ = 0, trips_ = 0, pc_ = 0, best_ = 0, cut_ = 0;
};

void ReducerEmitter::Setup() {
  job_ = Begin(kLocalSize, /*invocation_id=*/true);
  coords_ = b_.LocalVariable(b_.ArrayType(i64_, kMaxAxes));
  values_ = b_.LocalVariable(b_.ArrayType(i64_, kMaxCode));
  for (Id* var : {&point_, &walked_, &pc_, &best_})
    *var = b_.LocalVariable(i64_);
  for (Id& digit : digits_)
    digit = b_.LocalVariable(i64_);
  cut_ = b_.LocalVariable(bool_);
  code_count_ = Header(kWordCodeCount);
  points_ = Header(kWordPoints);
  stride_ = Header(kWordStride);
  // The invocation's first point, as digits; the outermost slot takes what
  // is left (past the last point only when the walk is over).
  Id rest = invocation_;
  for (int s = 0; s < kMaxAxes; ++s) {
    counts_[s] = Header(kWordCounts + s);
    begins_[s] = Header(kWordBegins + s);
    stride_digits_[s] = Header(kWordStrideDigits + s);
    Id digit = rest;
    if (s + 1 < kMaxAxes) {
      digit = Op(spv::OpSRem, i64_, {rest, counts_[s]});
      rest = Op(spv::OpSDiv, i64_, {rest, counts_[s]});
    }
    Set(digits_[s], digit);
    Set(Slot(coords_, I64(s), kMaxAxes), Add(begins_[s], digit));
  }
  Set(point_, invocation_);
  Set(walked_, I64(0));
  // The invocation's points: ceil((N - g) / T), or none.
  Id left = Smax(Sub(points_, invocation_), I64(0));
  trips_ = Op(spv::OpSDiv, i64_, {Add(left, Sub(stride_, I64(1))), stride_});
  Set(best_, I64(kNone));
  b_.OpVoid(spv::OpStore, {cut_, b_.ConstBool(false)});
}

// The element a read addresses at the current point, or kNone when an
// index is out of range or the read names nothing.
Id ReducerEmitter::CaseRead(Id read) {
  Id base = Add(I64(kWordReads), Mul(read, I64(kReadWords)));
  Id address = ToU64(JobWord(base));
  Id type = JobWord(Add(base, I64(1)));
  Id ok = Op(spv::OpINotEqual, bool_, {address, b_.ConstU64(0)});
  Id offset = I64(0);
  for (int d = 0; d < kMaxReadAxes; ++d) {
    Id at = Add(base, I64(2 + 3 * d));
    Id slot = JobWord(at);
    Id extent = JobWord(Add(at, I64(1)));
    Id byte_stride = JobWord(Add(at, I64(2)));
    Id used = Not(Lt(slot, I64(0)));
    Id index = Coord(slot);
    Id inside = And(Not(Lt(index, I64(0))), Lt(index, extent));
    ok = And(ok, Or(Not(used), inside));
    offset = Add(offset, Select(i64_, used, Mul(index, byte_stride), I64(0)));
  }
  // A read that is out of range loads the job block instead.
  Id addr = Select(u64_, ok, At(address, offset), job_);
  return Select(i64_, ok, ReadTyped(addr, type), I64(kNone));
}

// a op b; kNone propagates except through max, the rest wraps in 64 bits.
Id ReducerEmitter::CaseBinary(Id op, Id a, Id b) {
  Id none = Or(Eq(a, I64(kNone)), Eq(b, I64(kNone)));
  Id result = Add(a, b);
  result = Select(i64_, Eq(op, I64(kSub)), Sub(a, b), result);
  result = Select(i64_, Eq(op, I64(kMul)), Mul(a, b), result);
  result = Select(i64_, none, I64(kNone), result);
  return Select(i64_, Eq(op, I64(kMax)), Smax(a, b), result);
}

// The body at the current point, one instruction per trip; the value of
// instruction k lands in values[k].
void ReducerEmitter::Body() {
  Set(pc_, I64(0));
  // An early end inside shows in the point loop's check.
  auto running = [&] { return Lt(Get(pc_), code_count_); };
  WhileLoop(
      running, [&] { Instruction(); }, running, cut_);
}

void ReducerEmitter::Instruction() {
  Id sw_merge = b_.NewId(), leaf = b_.NewId(), read = b_.NewId(),
     binary = b_.NewId();
  Id pc = Get(pc_);
  Id at = Add(I64(kWordCode), Mul(pc, I64(kCodeWords)));
  Id op = JobWord(at);
  Id a = JobWord(Add(at, I64(1)));
  Id out = Slot(values_, pc, kMaxCode);
  Id op32 = Op(spv::OpSConvert, i32_, {op});
  b_.OpVoid(spv::OpSelectionMerge, {sw_merge, spv::SelectionControlMaskNone});
  b_.OpVoid(spv::OpSwitch, {op32, binary, static_cast<uint32_t>(kConst), leaf,
                            static_cast<uint32_t>(kAxis), leaf,
                            static_cast<uint32_t>(kRead), read});
  b_.Label(leaf);
  Set(out,
      Select(i64_, Eq(op, I64(kAxis)), Coord(a), JobWord(Add(at, I64(3)))));
  b_.Branch(sw_merge);
  b_.Label(read);
  Set(out, CaseRead(a));
  b_.Branch(sw_merge);
  b_.Label(binary);
  Id b = JobWord(Add(at, I64(2)));
  Set(out, CaseBinary(op, Get(Slot(values_, a, kMaxCode)),
                      Get(Slot(values_, b, kMaxCode))));
  b_.Branch(sw_merge);
  b_.Label(sw_merge);
  Set(pc_, Add(pc, I64(1)));
}

// The next point: T further, each digit stepping by T's digit with a carry.
void ReducerEmitter::Step() {
  Set(point_, Add(Get(point_), stride_));
  Id carry = I64(0);
  for (int s = 0; s < kMaxAxes; ++s) {
    Id sum = Add(Add(Get(digits_[s]), stride_digits_[s]), carry);
    Id digit = sum;
    if (s + 1 < kMaxAxes) {
      Id wrap = Not(Lt(sum, counts_[s]));
      digit = Select(i64_, wrap, Sub(sum, counts_[s]), sum);
      carry = Select(i64_, wrap, I64(1), I64(0));
    }
    Set(digits_[s], digit);
    Set(Slot(coords_, I64(s), kMaxAxes), Add(begins_[s], digit));
  }
}

void ReducerEmitter::PointLoop() {
  // Counts trips, so that the point index tells an early end.
  WhileLoop([&] { return Lt(Get(walked_), trips_); },
            [&] {
              Body();
              Id root = Get(Slot(values_, Sub(code_count_, I64(1)), kMaxCode));
              Set(best_, Smax(Get(best_), root));
              Step();
              Set(walked_, Add(Get(walked_), I64(1)));
            },
            [&] { return Lt(Get(point_), points_); }, cut_);
}

// The invocation's maximum into the job's result words.
void ReducerEmitter::Combine() {
  Id best = Get(best_);
  Id has = Op(spv::OpINotEqual, bool_, {best, I64(kNone)});
  Id below = And(has, Lt(best, I64(INT32_MIN)));
  Id above = Lt(I64(INT32_MAX), best);
  Id fits = And(has, Not(Or(below, above)));
  Id biased = Op(spv::OpUConvert, u32_, {ToU64(Add(best, I64(kBias)))});
  Id word = Select(u32_, fits, biased, b_.ConstU32(0));
  Id flags = b_.ConstU32(0);
  for (auto [set, bit] :
       {std::pair{fits, kFits}, std::pair{above, kAbove},
        std::pair{below, kBelow}, std::pair{GetBool(cut_), kCutShort}}) {
    flags = Op(spv::OpBitwiseOr, u32_,
               {flags, Select(u32_, set, b_.ConstU32(bit), b_.ConstU32(0))});
  }
  Id result = Word(job_, 8 * kWordResult);
  AtomicU32(spv::OpAtomicUMax, result, word);
  AtomicU32(spv::OpAtomicOr, Op(spv::OpIAdd, u64_, {result, b_.ConstU64(4)}),
            flags);
}

void ReducerEmitter::FastLoop(Id first) {
  Id byte_stride = Header(kWordFastStride);
  Id best = b_.LocalVariable(i32_);
  b_.OpVoid(spv::OpStore, {best, b_.ConstI32(INT32_MIN)});
  auto fold = [&](Id point) {
    Id v = Load(i32_, At(first, Mul(point, byte_stride)), 4);
    Id old = Op(spv::OpLoad, i32_, {best});
    Id larger = Op(spv::OpSLessThan, bool_, {old, v});
    b_.OpVoid(spv::OpStore, {best, Select(i32_, larger, v, old)});
  };
  // Four points a trip while four remain, their loads independent so they
  // are in flight together; then one a trip.
  constexpr int kUnroll = 4;
  Id last_of_four = Mul(stride_, I64(kUnroll - 1));
  WhileLoop([&] { return Lt(Add(Get(point_), last_of_four), points_); },
            [&] {
              Id p = Get(point_);
              for (int u = 0; u < kUnroll; ++u)
                fold(u == 0 ? p : Add(p, Mul(stride_, I64(u))));
              Set(point_, Add(p, Mul(stride_, I64(kUnroll))));
            },
            [&] { return Lt(Add(Get(point_), last_of_four), points_); }, cut_);
  WhileLoop([&] { return Lt(Get(point_), points_); },
            [&] {
              fold(Get(point_));
              Set(point_, Add(Get(point_), stride_));
            },
            [&] { return Lt(Get(point_), points_); }, cut_);
  Id any = Lt(invocation_, points_);
  Id wide = Op(spv::OpSConvert, i64_, {Op(spv::OpLoad, i32_, {best})});
  Set(best_, Select(i64_, any, wide, I64(kNone)));
}

void ReducerEmitter::FastOrInterpreted() {
  Id first = ToU64(Header(kWordFastAddress));
  Id fast = Op(spv::OpINotEqual, bool_, {first, b_.ConstU64(0)});
  Id merge = b_.NewId(), walk = b_.NewId(), interpret = b_.NewId();
  b_.OpVoid(spv::OpSelectionMerge, {merge, spv::SelectionControlMaskNone});
  b_.OpVoid(spv::OpBranchConditional, {fast, walk, interpret});
  b_.Label(walk);
  FastLoop(first);
  b_.Branch(merge);
  b_.Label(interpret);
  PointLoop();
  b_.Branch(merge);
  b_.Label(merge);
}

std::vector<uint32_t> ReducerEmitter::Build() {
  Setup();
  FastOrInterpreted();
  Combine();
  return End();
}

}  // namespace

std::vector<uint32_t> BuildReducerShader() {
  return ReducerEmitter().Build();
}

}  // namespace quadrants::codegen::spirv::reducer
