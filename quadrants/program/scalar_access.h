#ifndef QUADRANTS_PROGRAM_SCALAR_ACCESS_H_
#define QUADRANTS_PROGRAM_SCALAR_ACCESS_H_

#include "quadrants/ir/constant.h"
#include "quadrants/ir/types.h"

namespace quadrants {

// Reads / writes one element of `type` at `address` (host memory), in the
// layout generated code uses (u1 is one byte).
ir::Constant ReadScalar(const void* address, ir::PrimitiveType type);
void WriteScalar(void* address, ir::PrimitiveType type,
                 const ir::Constant& value);

// The 64-bit launch-context slot for a scalar argument (see runtime_abi.h).
int64_t ArgumentSlot(const ir::Constant& value);

}  // namespace quadrants

#endif  // QUADRANTS_PROGRAM_SCALAR_ACCESS_H_
