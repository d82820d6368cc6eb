#ifndef QUADRANTS_IR_KERNEL_H_
#define QUADRANTS_IR_KERNEL_H_

#include <memory>
#include <string>
#include <vector>

#include "quadrants/common/source_location.h"
#include "quadrants/ir/stmt.h"
#include "quadrants/ir/types.h"

namespace quadrants::ir {

struct KernelParam {
  enum class Kind { kScalar, kNdarray, kField };

  Kind kind = Kind::kScalar;
  std::string name;
  PrimitiveType dtype = PrimitiveType::kI32;
  int ndim = 0;       // ndarrays
  int snode_id = -1;  // field references: the field's place SNode

  static KernelParam Scalar(std::string name, PrimitiveType dtype) {
    return {Kind::kScalar, std::move(name), dtype, 0, -1};
  }
  static KernelParam Ndarray(std::string name, PrimitiveType dtype, int ndim) {
    return {Kind::kNdarray, std::move(name), dtype, ndim, -1};
  }
  static KernelParam Field(std::string name, PrimitiveType dtype,
                           int snode_id) {
    return {Kind::kField, std::move(name), dtype, 0, snode_id};
  }
};

// The root of a kernel's IR: its parameters and its top-level block.
class Kernel {
 public:
  explicit Kernel(std::string name, SourceLocation loc = {})
      : name_(std::move(name)),
        loc_(std::move(loc)),
        body_(std::make_unique<Block>()) {}

  const std::string& name() const { return name_; }
  const SourceLocation& loc() const { return loc_; }
  const std::vector<KernelParam>& params() const { return params_; }
  int AddParam(KernelParam param) {
    params_.push_back(std::move(param));
    return static_cast<int>(params_.size()) - 1;
  }
  Block* body() const { return body_.get(); }

 private:
  std::string name_;
  SourceLocation loc_;
  std::vector<KernelParam> params_;
  std::unique_ptr<Block> body_;
};

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_KERNEL_H_
