#ifndef QUADRANTS_CODEGEN_SPIRV_INTERPRETER_BUILDER_H_
#define QUADRANTS_CODEGEN_SPIRV_INTERPRETER_BUILDER_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "quadrants/codegen/spirv/module_builder.h"

// What the launch-time interpreter shaders (the adstack sizer and the
// max-reducer) share: one compute entry point whose 8-byte push constant is
// the address of a job block, i64 arithmetic, physical storage buffer loads
// and stores, and typed element reads.
namespace quadrants::codegen::spirv {

class InterpreterBuilder {
 protected:
  // Declares the capabilities, the types and the push constant, and starts
  // `main` with workgroup size `local_size`; returns the job block address
  // (a u64 id). With `invocation_id`, `invocation_` is the invocation's
  // global x index (an i64 id).
  Id Begin(uint32_t local_size, bool invocation_id = false);
  // Ends `main` and returns the module.
  std::vector<uint32_t> End();

  Id I64(int64_t v) { return b_.ConstI64(v); }
  Id Op(spv::Op op, Id type, std::initializer_list<uint32_t> operands) {
    return b_.Op(op, type, operands);
  }
  Id Add(Id a, Id b) { return Op(spv::OpIAdd, i64_, {a, b}); }
  Id Sub(Id a, Id b) { return Op(spv::OpISub, i64_, {a, b}); }
  Id Mul(Id a, Id b) { return Op(spv::OpIMul, i64_, {a, b}); }
  Id Eq(Id a, Id b) { return Op(spv::OpIEqual, bool_, {a, b}); }
  Id Lt(Id a, Id b) { return Op(spv::OpSLessThan, bool_, {a, b}); }
  Id And(Id a, Id b) { return Op(spv::OpLogicalAnd, bool_, {a, b}); }
  Id Or(Id a, Id b) { return Op(spv::OpLogicalOr, bool_, {a, b}); }
  Id Not(Id a) { return Op(spv::OpLogicalNot, bool_, {a}); }
  Id Select(Id type, Id c, Id a, Id b) {
    return Op(spv::OpSelect, type, {c, a, b});
  }
  Id Smax(Id a, Id b) { return Select(i64_, Lt(a, b), b, a); }
  Id ToU64(Id v) { return Op(spv::OpBitcast, u64_, {v}); }
  Id Pointer(Id type, Id addr_u64);
  // A device-scope, relaxed 32-bit atomic `op` with `value` on the u32 at
  // `addr_u64`; returns the old value. It goes through a function whose
  // pointer parameter backs the atomic, as SPIRV-Cross's MSL backend needs
  // (it rejects atomics straight on a converted address).
  Id AtomicU32(spv::Op op, Id addr_u64, Id value);
  Id Load(Id type, Id addr_u64, uint32_t align);
  void Store(Id addr_u64, Id value, Id type, uint32_t align);
  // addr + byte offset (an i64 id).
  Id At(Id addr_u64, Id offset_i64) {
    return Op(spv::OpIAdd, u64_, {addr_u64, ToU64(offset_i64)});
  }
  Id Word(Id addr_u64, int64_t offset) { return At(addr_u64, I64(offset)); }
  Id Get(Id var) { return Op(spv::OpLoad, i64_, {var}); }
  void Set(Id var, Id value) { b_.OpVoid(spv::OpStore, {var, value}); }
  Id GetBool(Id var) { return Op(spv::OpLoad, bool_, {var}); }
  // Element `index` (an i64 id) of a Function-storage i64 array of `size`
  // (a power of two) elements, wrapped into it.
  Id Slot(Id array, Id index, int64_t size);
  // A structured loop running `body` while `condition` (emitted in the
  // header) holds; `body` leaves its last block open. A device may end
  // loops early (lavapipe ends every loop of an invocation after 65535 back
  // edges in all, and runs nothing of the enclosing loop bodies after
  // that): `unfinished`, emitted after the loop, tells such an end and
  // sets the Function bool `cut`. It should not be `condition` itself,
  // which a compiler may take to be false there.
  void WhileLoop(const std::function<Id()>& condition,
                 const std::function<void()>& body,
                 const std::function<Id()>& unfinished, Id cut);
  // The element of `type` (a sizer TypeCode) at `addr`, as an i64, reading
  // only the aligned 32-bit words that hold it.
  Id ReadTyped(Id addr, Id type);

  ModuleBuilder b_;
  // Per atomic op used, the function that performs it (built by End).
  std::vector<std::pair<spv::Op, Id>> atomic_functions_;
  Id u32_ = 0, i32_ = 0, u64_ = 0, i64_ = 0, bool_ = 0, f32_ = 0;
  Id push_ = 0, main_ = 0, invocation_ = 0;
};

}  // namespace quadrants::codegen::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_INTERPRETER_BUILDER_H_
