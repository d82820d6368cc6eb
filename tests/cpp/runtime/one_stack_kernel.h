// A compiled kernel with given parameters and one task holding one f32
// adstack sized by a SizeExpr: what the launch sizer's tests and its
// benchmark size.
#ifndef TESTS_CPP_RUNTIME_ONE_STACK_KERNEL_H_
#define TESTS_CPP_RUNTIME_ONE_STACK_KERNEL_H_

#include <memory>
#include <utility>
#include <vector>

#include "quadrants/ir/kernel.h"
#include "quadrants/ir/size_expr.h"
#include "quadrants/runtime/backend.h"

namespace quadrants::testing_util {

class OneStackKernel : public CompiledKernel {
 public:
  OneStackKernel(const char* name, std::vector<ir::KernelParam> params,
                 ir::SizeExpr::Ptr tree, SourceLocation loc)
      : CompiledKernel(Artifact(name, std::move(params), std::move(tree),
                                std::move(loc))) {}

 private:
  static CompiledKernelData Artifact(const char* name,
                                     std::vector<ir::KernelParam> params,
                                     ir::SizeExpr::Ptr tree,
                                     SourceLocation loc) {
    CompiledKernelData artifact;
    artifact.facts.kernel_name = name;
    artifact.facts.params = std::move(params);
    artifact.tasks.emplace_back();
    artifact.tasks[0].adstacks.push_back(AdStackSpec{
        ir::PrimitiveType::kF32, 4, 0, std::move(tree), std::move(loc)});
    return artifact;
  }
};

}  // namespace quadrants::testing_util

#endif  // TESTS_CPP_RUNTIME_ONE_STACK_KERNEL_H_
