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

class Function;

// The root of a kernel's IR: its parameters, its top-level block and the
// real functions its code calls.
class Kernel {
 public:
  explicit Kernel(std::string name, SourceLocation loc = {})
      : name_(std::move(name)),
        loc_(std::move(loc)),
        body_(std::make_unique<Block>()) {}

  const std::string& name() const { return name_; }
  const SourceLocation& loc() const { return loc_; }
  const std::vector<KernelParam>& params() const { return params_; }
  // Functions see every parameter, added before or after them.
  int AddParam(KernelParam param);
  Block* body() const { return body_.get(); }
  ~Kernel();

  // Real functions, called by index (FuncCallStmt::function).
  const std::vector<std::unique_ptr<Function>>& functions() const {
    return functions_;
  }
  int AddFunction(std::unique_ptr<Function> function);

  // Sparse SNodes this kernel's writes do not activate (qd.no_activate):
  // a write to an inactive cell of one of them is dropped.
  const std::vector<int>& no_activate() const { return no_activate_; }
  void AddNoActivate(int snode) { no_activate_.push_back(snode); }

 private:
  std::vector<int> no_activate_;
  std::string name_;
  SourceLocation loc_;
  std::vector<KernelParam> params_;
  std::unique_ptr<Block> body_;
  std::vector<std::unique_ptr<Function>> functions_;
};

struct FunctionParam {
  std::string name;
  DataType type;  // a scalar, or a pointer to a caller's variable
};

// A function compiled once and called from kernel code (or from itself).
// Its body lives in a Kernel of its own, named after the function, with the
// parameters of the calling kernel, so that passes written for kernels run
// on it and field and ndarray accesses inside name the kernel's arguments.
// FuncArgStmt reads its parameters; ReturnStmt leaves it.
class Function {
 public:
  Function(const Kernel& caller, std::string name, SourceLocation loc,
           std::vector<FunctionParam> params)
      : scope_(std::make_unique<Kernel>(std::move(name), std::move(loc))),
        params_(std::move(params)) {
    for (const KernelParam& p : caller.params())
      scope_->AddParam(p);
  }
  const std::string& name() const { return scope_->name(); }
  const SourceLocation& loc() const { return scope_->loc(); }
  const std::vector<FunctionParam>& params() const { return params_; }
  Block* body() const { return scope_->body(); }
  Kernel& scope() const { return *scope_; }

 private:
  std::unique_ptr<Kernel> scope_;
  std::vector<FunctionParam> params_;
};

inline Kernel::~Kernel() = default;

inline int Kernel::AddParam(KernelParam param) {
  for (const auto& function : functions_)
    function->scope().AddParam(param);
  params_.push_back(std::move(param));
  return static_cast<int>(params_.size()) - 1;
}

inline int Kernel::AddFunction(std::unique_ptr<Function> function) {
  functions_.push_back(std::move(function));
  return static_cast<int>(functions_.size()) - 1;
}

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_KERNEL_H_
