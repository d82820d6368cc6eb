#ifndef QUADRANTS_IR_ADSTACK_GATE_H_
#define QUADRANTS_IR_ADSTACK_GATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "quadrants/ir/op_kinds.h"
#include "quadrants/ir/types.h"

namespace quadrants::ir {

// How a gate indexes one axis of its array: with digit (i // divisor) %
// modulus of loop axis `axis` of the task (modulus 0: none), a constant,
// or the value of scalar kernel parameter `value`.
struct AdStackGateIndex {
  enum class Kind { kLoopDigit, kConst, kArg };
  Kind kind = Kind::kConst;
  int axis = 0;
  int64_t divisor = 1;
  int64_t modulus = 0;
  int64_t value = 0;  // kConst: the index; kArg: the parameter
};

// The `if` above every adstack use of a task: `array[indices] <op>
// threshold`, read from a field place (`is_field`, SNode `id`) or an
// ndarray parameter `id` the kernel never writes, whose indices map
// distinct iterations to distinct elements. Only iterations where it holds
// push, so the launch can size the heap by the elements that pass it.
struct AdStackGate {
  bool is_field = false;
  int id = -1;
  PrimitiveType dtype = PrimitiveType::kF32;  // the element's
  std::vector<AdStackGateIndex> indices;
  BinaryOpKind op = BinaryOpKind::kGt;  // one of the comparisons
  // The threshold, exact in one of the two: integers compare as int64 (or
  // uint64 for unsigned element types), floats as double.
  double threshold = 0;
  int64_t int_threshold = 0;
  std::string label;  // the user's spelling of the array

  // e.g. "sel[i] > 1e-09".
  std::string ToString() const;
  // Whether an element passes: a float element as a double, an integer
  // one as an int64 (the bits of a uint64).
  bool Passes(double element) const;
  bool PassesInt(int64_t element) const;
};

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_ADSTACK_GATE_H_
