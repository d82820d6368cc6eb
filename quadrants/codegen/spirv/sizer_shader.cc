#include "quadrants/codegen/spirv/sizer_shader.h"

#include <functional>

#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/codegen/spirv/interpreter_builder.h"
#include "quadrants/codegen/spirv/sizer_bytecode.h"

namespace quadrants::codegen::spirv::sizer {
namespace {

// Emits the interpreter. Everything inside an instruction is branch-free
// (selects), so the only control flow is the loop over stacks, the
// interpreter loop and its switch on the opcode.
class SizerEmitter : public InterpreterBuilder {
 public:
  std::vector<uint32_t> Build();

 private:
  // ---- the interpreter ----------------------------------------------------
  void Setup();
  void StackLoop();
  void Interpreter();
  // One instruction: a switch on the opcode.
  void Step();
  void Finish(Id k);
  // Case bodies: each updates pc and sp.
  void Push(Id value, Id pc_step);
  void CaseField();
  void CaseNdRead();
  void CaseBinary(Id op);
  void CaseRangeBegin();
  void CaseRangeNext();

  // Code word `index` (an i64 id).
  Id Code(Id index) {
    return Load(
        i64_, At(code_, Op(spv::OpShiftLeftLogical, i64_, {index, I64(3)})), 8);
  }
  Id Peek(Id index) { return Get(Slot(stack_, index, kStackDepth)); }
  void Poke(Id index, Id value) {
    Set(Slot(stack_, index, kStackDepth), value);
  }

  Id ctx_ = 0, record_ = 0, status_ = 0, code_ = 0, root_ = 0;
  Id stack_ = 0, vars_ = 0;
  Id pc_ = 0, sp_ = 0, k_ = 0, running_ = 0, aborted_ = 0, cut_ = 0;
  Id iterations_ = 0, float_offset_ = 0, int_offset_ = 0;
  // Per interpreter step: pc, sp, the operand words and the top two values.
  Id pc_val_ = 0, sp_val_ = 0, w1_ = 0, w2_ = 0, top_ = 0, second_ = 0;
};

void SizerEmitter::Setup() {
  const Id job = Begin(1);
  stack_ = b_.LocalVariable(b_.ArrayType(i64_, kStackDepth));
  vars_ = b_.LocalVariable(b_.ArrayType(i64_, kMaxVars));
  for (Id* var : {&pc_, &sp_, &k_, &iterations_, &float_offset_, &int_offset_})
    *var = b_.LocalVariable(i64_);
  for (Id* var : {&running_, &aborted_, &cut_})
    *var = b_.LocalVariable(bool_);
  ctx_ = Load(u64_, Word(job, kJobContext), 8);
  record_ = Load(u64_, Word(job, kJobRecord), 8);
  status_ = Load(u64_, Word(job, kJobStatus), 8);
  code_ = Load(u64_, Word(job, kJobCode), 8);
  Id runtime = Load(u64_, Word(ctx_, abi::kCtxRuntime), 8);
  root_ = Load(u64_, Word(runtime, abi::kRtRoot), 8);
  for (Id var : {k_, iterations_, float_offset_, int_offset_})
    Set(var, I64(0));
  b_.OpVoid(spv::OpStore, {aborted_, b_.ConstBool(false)});
  b_.OpVoid(spv::OpStore, {cut_, b_.ConstBool(false)});
}

void SizerEmitter::Push(Id value, Id pc_step) {
  Poke(sp_val_, value);
  Set(sp_, Add(sp_val_, I64(1)));
  Set(pc_, Add(pc_val_, pc_step));
}

// Pops n indices, pushes the field element they address or kNone.
void SizerEmitter::CaseField() {
  Id n = w1_;
  Id offset = Code(Add(pc_val_, I64(3)));
  Id ok = Op(spv::OpINotEqual, bool_, {root_, b_.ConstU64(0)});
  for (int a = 0; a < kMaxAxes; ++a) {
    Id active = Lt(I64(a), n);
    Id index = Peek(Add(Sub(sp_val_, n), I64(a)));
    Id stride = Code(Add(pc_val_, I64(4 + 2 * a)));
    Id extent = Code(Add(pc_val_, I64(5 + 2 * a)));
    Id inside = And(Not(Lt(index, I64(0))), Lt(index, extent));
    ok = And(ok, Or(Not(active), inside));
    offset = Add(offset, Select(i64_, active, Mul(index, stride), I64(0)));
  }
  Id addr = Select(u64_, ok, At(root_, offset), code_);
  Id value = Select(i64_, ok, ReadTyped(addr, w2_), I64(kNone));
  Id at = Sub(sp_val_, n);
  Poke(at, value);
  Set(sp_, Add(at, I64(1)));
  Set(pc_, Add(pc_val_, Add(I64(4), Mul(n, I64(2)))));
}

// Pops n indices, pushes the ndarray element they address or kNone.
void SizerEmitter::CaseNdRead() {
  Id arg = w1_, n = w2_;
  Id type = Code(Add(pc_val_, I64(3)));
  Id valid = Code(Add(pc_val_, I64(4)));
  Id data =
      Load(u64_, At(ctx_, Add(I64(abi::kCtxNdarrayData), Mul(arg, I64(8)))), 8);
  Id ok = And(Op(spv::OpINotEqual, bool_, {valid, I64(0)}),
              Op(spv::OpINotEqual, bool_, {data, b_.ConstU64(0)}));
  Id linear = I64(0);
  for (int a = 0; a < kMaxAxes; ++a) {
    Id active = Lt(I64(a), n);
    Id index = Peek(Add(Sub(sp_val_, n), I64(a)));
    Id extent = Load(i64_,
                     At(ctx_, Add(I64(abi::kCtxNdarrayShape + 8 * a),
                                  Mul(arg, I64(8 * abi::kMaxNdim)))),
                     8);
    Id inside = And(Not(Lt(index, I64(0))), Lt(index, extent));
    ok = And(ok, Or(Not(active), inside));
    linear = Select(i64_, active, Add(Mul(linear, extent), index), linear);
  }
  Id bytes = Op(spv::OpBitwiseAnd, i64_, {type, I64(15)});
  Id addr = Select(u64_, ok, At(data, Mul(linear, bytes)), code_);
  Id value = Select(i64_, ok, ReadTyped(addr, type), I64(kNone));
  Id at = Sub(sp_val_, n);
  Poke(at, value);
  Set(sp_, Add(at, I64(1)));
  Set(pc_, Add(pc_val_, I64(5)));
}

// second op top; kNone propagates except through max. Floor division and
// modulo follow Python and give 0 for a zero divisor.
void SizerEmitter::CaseBinary(Id op) {
  Id a = second_, b = top_;
  Id none = Or(Eq(a, I64(kNone)), Eq(b, I64(kNone)));
  Id zero = Eq(b, I64(0));
  // Never divide by 0, nor kNone by -1.
  Id sa = Select(i64_, none, I64(0), a);
  Id sb = Select(i64_, Or(zero, none), I64(1), b);
  Id q = Op(spv::OpSDiv, i64_, {sa, sb});
  Id r = Sub(sa, Mul(q, sb));
  Id adjust =
      And(Op(spv::OpINotEqual, bool_, {r, I64(0)}),
          Op(spv::OpLogicalNotEqual, bool_, {Lt(sa, I64(0)), Lt(sb, I64(0))}));
  q = Select(i64_, adjust, Sub(q, I64(1)), q);
  Id floordiv = Select(i64_, zero, I64(0), q);
  Id mod = Select(i64_, zero, I64(0), Sub(sa, Mul(q, sb)));
  Id result = Add(a, b);
  result = Select(i64_, Eq(op, I64(kSub)), Sub(a, b), result);
  result = Select(i64_, Eq(op, I64(kMul)), Mul(a, b), result);
  result = Select(i64_, Eq(op, I64(kFloorDiv)), floordiv, result);
  result = Select(i64_, Eq(op, I64(kMod)), mod, result);
  result = Select(i64_, none, I64(kNone), result);
  result = Select(i64_, Eq(op, I64(kMax)), Smax(a, b), result);
  Id at = Sub(sp_val_, I64(2));
  Poke(at, result);
  Set(sp_, Add(at, I64(1)));
  Set(pc_, Add(pc_val_, I64(1)));
}

void SizerEmitter::CaseRangeBegin() {
  Id begin = second_, end = top_;
  Id none = Or(Eq(begin, I64(kNone)), Eq(end, I64(kNone)));
  Id count = Select(i64_, none, I64(0), Smax(Sub(end, begin), I64(0)));
  Id total = Add(Get(iterations_), count);
  Set(iterations_, total);
  Id over = Lt(I64(kMaxIterations), total);
  b_.OpVoid(spv::OpStore,
            {aborted_, Or(Op(spv::OpLoad, bool_, {aborted_}), over)});
  b_.OpVoid(spv::OpStore,
            {running_, Op(spv::OpLogicalAnd, bool_,
                          {Op(spv::OpLoad, bool_, {running_}), Not(over)})});
  Id active = Lt(I64(0), count);
  Id below = Sub(sp_val_, I64(2));
  Poke(below, Select(i64_, active, end, I64(kNone)));
  Poke(Sub(sp_val_, I64(1)), I64(kNone));
  Set(Slot(vars_, w1_, kMaxVars), begin);
  Set(sp_, Select(i64_, active, sp_val_, Sub(sp_val_, I64(1))));
  Set(pc_, Select(i64_, active, Add(pc_val_, I64(3)), w2_));
}

void SizerEmitter::CaseRangeNext() {
  Id best = Smax(second_, top_);
  Id end = Peek(Sub(sp_val_, I64(3)));
  Id var = Slot(vars_, w1_, kMaxVars);
  Id next = Add(Get(var), I64(1));
  Set(var, next);
  Id more = Lt(next, end);
  Poke(Sub(sp_val_, Select(i64_, more, I64(2), I64(3))), best);
  Set(sp_, Sub(sp_val_, Select(i64_, more, I64(1), I64(2))));
  Set(pc_, Select(i64_, more, w2_, Add(pc_val_, I64(3))));
}

// One instruction per trip of a structured loop with a switch on the
// opcode; kEnd (and anything unknown) stops it.
void SizerEmitter::Interpreter() {
  b_.OpVoid(spv::OpStore, {running_, b_.ConstBool(true)});
  // An early end inside shows in the stack loop's check.
  auto running = [&] { return GetBool(running_); };
  WhileLoop(
      running, [&] { Step(); }, running, cut_);
}

void SizerEmitter::Step() {
  Id sw_merge = b_.NewId(), end_case = b_.NewId();
  pc_val_ = Get(pc_);
  sp_val_ = Get(sp_);
  Id op = Code(pc_val_);
  w1_ = Code(Add(pc_val_, I64(1)));
  w2_ = Code(Add(pc_val_, I64(2)));
  top_ = Peek(Sub(sp_val_, I64(1)));
  second_ = Peek(Sub(sp_val_, I64(2)));
  Id op32 = Op(spv::OpSConvert, i32_, {op});
  struct Case {
    std::vector<int64_t> ops;
    std::function<void()> emit;
    Id label = 0;
  };
  std::vector<Case> cases = {
      {{kConst}, [&] { Push(w1_, I64(2)); }},
      {{kArg},
       [&] {
         Push(
             Load(i64_, At(ctx_, Add(I64(abi::kCtxArgs), Mul(w1_, I64(8)))), 8),
             I64(2));
       }},
      {{kShape},
       [&] {
         Id index = Add(Mul(w1_, I64(abi::kMaxNdim)), w2_);
         Push(
             Load(i64_,
                  At(ctx_, Add(I64(abi::kCtxNdarrayShape), Mul(index, I64(8)))),
                  8),
             I64(3));
       }},
      {{kVar}, [&] { Push(Get(Slot(vars_, w1_, kMaxVars)), I64(2)); }},
      {{kField}, [&] { CaseField(); }},
      {{kNdRead}, [&] { CaseNdRead(); }},
      {{kLoopIndexMax},
       [&] {
         Poke(Sub(sp_val_, I64(1)), Select(i64_, Eq(top_, I64(kNone)),
                                           I64(kNone), Sub(top_, I64(1))));
         Set(pc_, Add(pc_val_, I64(1)));
       }},
      {{kAdd, kSub, kMul, kMax, kFloorDiv, kMod}, [&] { CaseBinary(op); }},
      {{kRangeBegin}, [&] { CaseRangeBegin(); }},
      {{kRangeNext}, [&] { CaseRangeNext(); }},
  };
  std::vector<uint32_t> operands = {op32, end_case};
  for (Case& c : cases) {
    c.label = b_.NewId();
    for (int64_t o : c.ops) {
      operands.push_back(static_cast<uint32_t>(o));
      operands.push_back(c.label);
    }
  }
  b_.OpVoid(spv::OpSelectionMerge, {sw_merge, spv::SelectionControlMaskNone});
  b_.OpVoid(spv::OpSwitch, operands);
  for (Case& c : cases) {
    b_.Label(c.label);
    c.emit();
    b_.Branch(sw_merge);
  }
  b_.Label(end_case);
  b_.OpVoid(spv::OpStore, {running_, b_.ConstBool(false)});
  b_.Branch(sw_merge);
  b_.Label(sw_merge);
}

// Stack k's capacity and offset into the record.
void SizerEmitter::Finish(Id k) {
  Id header = Add(I64(kHeaderWords), Mul(k, I64(kStackWords)));
  Id is_float = Op(spv::OpINotEqual, bool_, {Code(header), I64(0)});
  Id slot_bytes = Code(Add(header, I64(1)));
  Id floor = Code(Add(header, I64(3)));
  Id sp = Get(sp_);
  Id result = Select(i64_, Lt(I64(0), sp), Peek(Sub(sp, I64(1))), I64(kNone));
  Id value = Select(i64_, Eq(result, I64(kNone)), I64(0), result);
  // The setup slots, and at least one slot (a push clamps to slot cap - 1).
  Id capacity = Smax(Smax(value, floor), I64(1));
  Id offset = Select(i64_, is_float, Get(float_offset_), Get(int_offset_));
  Id entry = At(record_,
                Add(I64(abi::kAdHeaderBytes), Mul(k, I64(abi::kAdStackBytes))));
  Store(Word(entry, abi::kAdStackOffset), offset, i64_, 8);
  Store(Word(entry, abi::kAdStackCapacity), capacity, i64_, 8);
  // Every stack starts 8-byte aligned in an invocation's slice.
  Id bytes = Op(spv::OpBitwiseAnd, i64_,
                {Add(Mul(capacity, slot_bytes), I64(7)), I64(~int64_t{7})});
  Id next = Add(offset, bytes);
  Set(float_offset_, Select(i64_, is_float, next, Get(float_offset_)));
  Set(int_offset_, Select(i64_, is_float, Get(int_offset_), next));
}

void SizerEmitter::StackLoop() {
  Id count = Code(I64(0));
  WhileLoop([&] { return And(Lt(Get(k_), count), Not(GetBool(aborted_))); },
            [&] {
              Id k = Get(k_);
              Set(pc_,
                  Code(Add(I64(kHeaderWords + 2), Mul(k, I64(kStackWords)))));
              Set(sp_, I64(0));
              // Each stack's walks have the whole guard, as on the host.
              Set(iterations_, I64(0));
              Interpreter();
              Finish(k);
              Set(k_, Add(k, I64(1)));
            },
            // Ended early, or aborted by the guard.
            [&] { return Lt(Get(k_), count); }, cut_);
  Id cut = GetBool(cut_);
  Id aborted = Op(spv::OpLoad, bool_, {aborted_});
  Id outcome = Select(i64_, cut, I64(kCutShort), I64(kDone));
  outcome = Select(i64_, aborted, I64(kGuardHit), outcome);
  Store(Word(status_, kStatusFloatStride), Get(float_offset_), i64_, 8);
  Store(Word(status_, kStatusIntStride), Get(int_offset_), i64_, 8);
  Store(Word(status_, kStatusIterations), Get(iterations_), i64_, 8);
  // An aborted stack was finished and counted before the loop stopped.
  Id stack = Select(i64_, aborted, Sub(Get(k_), I64(1)), Get(k_));
  Store(Word(status_, kStatusStack), stack, i64_, 8);
  Store(Word(status_, kStatusOutcome), outcome, i64_, 8);
}

std::vector<uint32_t> SizerEmitter::Build() {
  Setup();
  StackLoop();
  return End();
}

}  // namespace

std::vector<uint32_t> BuildSizerShader() {
  return SizerEmitter().Build();
}

}  // namespace quadrants::codegen::spirv::sizer
