#ifndef QUADRANTS_IR_HASH_H_
#define QUADRANTS_IR_HASH_H_

#include <cstdint>

#include "quadrants/ir/kernel.h"

namespace quadrants::ir {

// A 64-bit hash of the kernel's structure: name, parameters, every
// statement's kind, type, attributes, operand numbering and source location.
// It depends on no pointer or process state, so it is the same in every
// process and can key an on-disk compile cache.
uint64_t StructuralHash(const Kernel& kernel);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_HASH_H_
