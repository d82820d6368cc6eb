#ifndef QUADRANTS_PROGRAM_KERNEL_ARGUMENT_H_
#define QUADRANTS_PROGRAM_KERNEL_ARGUMENT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "quadrants/ir/constant.h"
#include "quadrants/ir/types.h"

namespace quadrants {

class CompiledKernel;
class Ndarray;

// One argument of a launch: a scalar, a Quadrants ndarray, or external
// memory (e.g. a numpy array) given by pointer, dtype and shape.
struct KernelArgument {
  // kExternal: host memory another library owns (numpy); kDevice: memory
  // another library owns in the backend's own device memory (a torch CUDA
  // tensor), which kernels address as it is.
  enum class Kind { kScalar, kNdarray, kExternal, kDevice };

  Kind kind = Kind::kScalar;
  ir::Constant scalar = ir::Constant::Int(ir::PrimitiveType::kI32, 0);
  Ndarray* ndarray = nullptr;
  void* data = nullptr;
  ir::PrimitiveType dtype = ir::PrimitiveType::kI32;
  std::vector<int64_t> shape;

  static KernelArgument Scalar(ir::Constant value) {
    KernelArgument a;
    a.kind = Kind::kScalar;
    a.scalar = value;
    return a;
  }
  static KernelArgument Array(Ndarray* array) {
    KernelArgument a;
    a.kind = Kind::kNdarray;
    a.ndarray = array;
    return a;
  }
  static KernelArgument External(void* data, ir::PrimitiveType dtype,
                                 std::vector<int64_t> shape) {
    KernelArgument a;
    a.kind = Kind::kExternal;
    a.data = data;
    a.dtype = dtype;
    a.shape = std::move(shape);
    return a;
  }
  static KernelArgument Device(void* data, ir::PrimitiveType dtype,
                               std::vector<int64_t> shape) {
    KernelArgument a = External(data, dtype, std::move(shape));
    a.kind = Kind::kDevice;
    return a;
  }
};

// A graph kernel's plan as the front end gives it (see PlanStep in
// runtime/backend.h): parts with their arguments, and loops on an i32
// counter ndarray.
struct KernelPlanStep {
  std::shared_ptr<const CompiledKernel> part;
  std::vector<KernelArgument> args;
  Ndarray* counter = nullptr;
  std::vector<KernelPlanStep> body;
};

}  // namespace quadrants

#endif  // QUADRANTS_PROGRAM_KERNEL_ARGUMENT_H_
