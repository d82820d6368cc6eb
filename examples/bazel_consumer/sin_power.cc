// Builds y[i] = sin(x[i])^n with a loop whose trip count n is a kernel
// argument, makes its reverse-mode gradient kernel and runs both on the CPU,
// checking the results against the closed forms
//   y      = sin(x)^n
//   dy/dx  = n * sin(x)^(n-1) * cos(x)
// (the chain rule through v_{k+1} = v_k * sin(x), v_0 = 1).
//
// Usage: sin_power [n]   (n defaults to 5). Exits 1 on a mismatch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/statements.h"
#include "quadrants/program/program.h"
#include "quadrants/transforms/autodiff/reverse_mode.h"
#include "quadrants/transforms/pipeline.h"

namespace {

using quadrants::CompileConfig;
using quadrants::KernelArgument;
using quadrants::Ndarray;
using quadrants::Program;
using quadrants::ir::Constant;
using quadrants::ir::IRBuilder;
using quadrants::ir::Kernel;
using quadrants::ir::KernelParam;
using quadrants::ir::PrimitiveType;
using quadrants::ir::Stmt;
using quadrants::ir::UnaryOpKind;

constexpr PrimitiveType kF64 = PrimitiveType::kF64;
constexpr PrimitiveType kI32 = PrimitiveType::kI32;

// Each result goes through about 2n + 4 correctly rounded f64 operations
// (plus sin and cos, within an ulp or two), so its relative error is below
// (2n + 4) * 2^-53, about 2e-15 for n = 5. 1e-12 leaves a wide margin for
// larger n while any real mistake (a wrong derivative) is off by O(1).
constexpr double kRelTol = 1e-12;

// for i in range(x.shape[0]):
//   s = sin(x[i]); v = 1.0
//   for k in range(n): v = v * s
//   y[i] = v
std::unique_ptr<Kernel> BuildSinPower() {
  auto kernel = std::make_unique<Kernel>(
      "sin_power", quadrants::SourceLocation{"sin_power.cc", 1});
  const int n = kernel->AddParam(KernelParam::Scalar("n", kI32));
  const int x = kernel->AddParam(KernelParam::Ndarray("x", kF64, 1));
  const int y = kernel->AddParam(KernelParam::Ndarray("y", kF64, 1));
  IRBuilder b(kernel.get());
  auto* outer = b.RangeFor(b.ConstI32(0), b.NdarrayShape(x, 0));
  {
    auto outer_scope = b.EnterBlock(outer->body());
    Stmt* i = b.LoopIndex(outer);
    Stmt* s = b.Unary(UnaryOpKind::kSin, b.GlobalLoad(b.NdarrayPtr(x, {i})));
    Stmt* v = b.Alloca(kF64);
    b.LocalStore(v, b.ConstF64(1.0));
    // The dynamic loop: its trip count is only known at launch.
    auto* inner = b.RangeFor(b.ConstI32(0), b.ArgLoad(n));
    {
      auto inner_scope = b.EnterBlock(inner->body());
      b.LocalStore(v, b.Mul(b.LocalLoad(v), s));
    }
    b.GlobalStore(b.NdarrayPtr(y, {i}), b.LocalLoad(v));
  }
  return kernel;
}

bool Check(const absl::Status& status, const char* what) {
  if (status.ok())
    return true;
  std::fprintf(stderr, "sin_power: %s: %s\n", what,
               std::string(status.message()).c_str());
  return false;
}

bool Close(double got, double want) {
  return std::abs(got - want) <= kRelTol * std::max(1.0, std::abs(want));
}

int Run(int n) {
  CompileConfig config;
  config.arch = quadrants::Arch::kCpu;
  config.default_fp = kF64;
  // The inner loop carries v into a product, so reversing it needs the
  // per-iteration values: the adstack keeps them, sized from n at launch.
  config.ad_stack_experimental_enabled = true;
  auto program = Program::Create(config);
  if (!Check(program.status(), "creating the CPU program"))
    return 2;

  std::unique_ptr<Kernel> kernel = BuildSinPower();

  // The gradient kernel, made with the autodiff library from the kernel
  // lowered to offloaded tasks (which is what MakeGradKernel takes).
  std::unique_ptr<Kernel> grad = quadrants::ir::CloneKernel(*kernel);
  quadrants::transforms::PipelineOptions lowering;
  lowering.types = {config.default_fp, config.default_ip};
  lowering.snodes = &(*program)->snodes();
  if (!Check(quadrants::transforms::LowerToTasks(*grad, lowering),
             "lowering the kernel") ||
      !Check(quadrants::transforms::autodiff::MakeGradKernel(
                 *grad, (*program)->snodes(), {.adstack_enabled = true}),
             "making the gradient kernel"))
    return 2;
  std::printf("gradient kernel parameters:");
  for (const KernelParam& p : grad->params())
    std::printf(" %s", p.name.c_str());
  std::printf("\n");

  const std::vector<double> xs = {-0.7, 0.3, 1.0, 2.0};
  const int64_t count = static_cast<int64_t>(xs.size());
  auto make = [&](PrimitiveType dtype) {
    auto array = (*program)->CreateNdarray(dtype, {count});
    return array.ok() ? *array : nullptr;
  };
  std::shared_ptr<Ndarray> x = make(kF64), y = make(kF64), x_grad = make(kF64),
                           y_grad = make(kF64);
  if (!x || !y || !x_grad || !y_grad) {
    std::fprintf(stderr, "sin_power: cannot allocate the arrays\n");
    return 2;
  }
  for (int64_t i = 0; i < count; ++i) {
    static_cast<double*>(x->data())[i] = xs[i];
    static_cast<double*>(x_grad->data())[i] = 0.0;
    static_cast<double*>(y_grad->data())[i] = 1.0;  // loss = sum(y)
  }
  const KernelArgument n_arg = KernelArgument::Scalar(Constant::Int(kI32, n));

  // Program takes kernels before lowering: CompileGrad runs the same
  // LowerToTasks + MakeGradKernel as above, then generates CPU code.
  auto forward = (*program)->Compile(*kernel);
  if (!Check(forward.status(), "compiling sin_power"))
    return 2;
  if (!Check(
          (*program)->Launch(**forward, {n_arg, KernelArgument::Array(x.get()),
                                         KernelArgument::Array(y.get())}),
          "launching sin_power") ||
      !Check((*program)->Sync(), "running sin_power"))
    return 2;
  auto backward = (*program)->CompileGrad(*kernel);
  if (!Check(backward.status(), "compiling sin_power_grad"))
    return 2;
  if (!Check(
          (*program)->Launch(**backward, {n_arg, KernelArgument::Array(x.get()),
                                          KernelArgument::Array(y.get()),
                                          KernelArgument::Array(x_grad.get()),
                                          KernelArgument::Array(y_grad.get())}),
          "launching sin_power_grad") ||
      !Check((*program)->Sync(), "running sin_power_grad"))
    return 2;

  bool ok = true;
  std::printf("n = %d\n", n);
  for (int64_t i = 0; i < count; ++i) {
    const double xi = xs[i];
    const double value = static_cast<double*>(y->data())[i];
    const double gradient = static_cast<double*>(x_grad->data())[i];
    const double want_value = std::pow(std::sin(xi), n);
    const double want_gradient =
        n * std::pow(std::sin(xi), n - 1) * std::cos(xi);
    const bool match =
        Close(value, want_value) && Close(gradient, want_gradient);
    ok &= match;
    std::printf(
        "x = %+.2f  y = %+.15e (hand %+.15e)  dy/dx = %+.15e (hand %+.15e)  "
        "%s\n",
        xi, value, want_value, gradient, want_gradient,
        match ? "ok" : "MISMATCH");
  }
  std::printf("%s (relative tolerance %g)\n", ok ? "PASS" : "FAIL", kRelTol);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 5;
  if (n < 1) {
    std::fprintf(stderr, "usage: sin_power [n >= 1]\n");
    return 2;
  }
  return Run(n);
}
