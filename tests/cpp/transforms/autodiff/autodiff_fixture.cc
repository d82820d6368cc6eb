#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"

#include "quadrants/ir/printer.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/transforms/autodiff/reverse_mode.h"

namespace quadrants::autodiff_test {
namespace {

using ir::PrimitiveType;

constexpr char kFile[] = "k.py";

int Place(ir::SNodeTree& tree, int parent, PrimitiveType type,
          const char* name) {
  return tree.AddPlace(parent, type, name).value();
}

// A float field with a gradient and, when `dual`, a tangent next to it.
int DifferentiableField(ir::SNodeTree& tree, int parent, const char* name,
                        bool dual) {
  const std::string base = name;
  const int primal = Place(tree, parent, PrimitiveType::kF32, name);
  const int grad =
      Place(tree, parent, PrimitiveType::kF32, (base + ".grad").c_str());
  EXPECT_TRUE(tree.LinkGrad(primal, grad).ok());
  if (dual) {
    const int tangent =
        Place(tree, parent, PrimitiveType::kF32, (base + ".dual").c_str());
    EXPECT_TRUE(tree.LinkDual(primal, tangent).ok());
  }
  return primal;
}

}  // namespace

AutodiffTest::AutodiffTest()
    : kernel_("k", SourceLocation{kFile, 1}), b_(&kernel_, &snodes_) {
  const int row = snodes_.AddDense(snodes_.root(), {0}, {16}).value();
  fields_.x = DifferentiableField(snodes_, row, "x", /*dual=*/true);
  fields_.y = DifferentiableField(snodes_, row, "y", /*dual=*/true);
  fields_.n = Place(snodes_, row, PrimitiveType::kI32, "n");
  const int grid = snodes_.AddDense(snodes_.root(), {0, 1}, {8, 16}).value();
  fields_.f = DifferentiableField(snodes_, grid, "f", /*dual=*/false);
  EXPECT_TRUE(snodes_.Finalize().ok());
  At(2);
}

void AutodiffTest::At(int line) {
  b_.SetLocation(SourceLocation{kFile, line});
}

absl::Status AutodiffTest::Lower(transforms::PipelineOptions options) {
  options.snodes = &snodes_;
  options.verify_each_pass = true;
  return transforms::LowerToTasks(kernel_, options);
}

absl::Status AutodiffTest::LowerReverse(bool stack_trig_derivatives,
                                       bool checkpointing) {
  transforms::PipelineOptions options;
  options.autodiff = transforms::AutodiffMode::kReverse;
  options.adstack_enabled = true;
  options.stack_trig_derivatives = stack_trig_derivatives;
  options.checkpointing = checkpointing;
  return Lower(options);
}

::testing::AssertionResult AutodiffTest::IsError(const absl::Status& status,
                                                 ErrorKind kind,
                                                 const std::string& message) {
  if (!status.ok() && GetErrorKind(status) == kind &&
      status.message() == message) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "expected " << ErrorKindName(kind) << ": " << message
         << "\n     got "
         << (status.ok() ? "OK" : ErrorKindName(GetErrorKind(status))) << ": "
         << status.message();
}

absl::Status AutodiffTest::MakeGrad(bool adstack_enabled, bool checkpointing) {
  if (absl::Status lowered = Lower(); !lowered.ok())
    return lowered;
  return Grad(adstack_enabled, checkpointing);
}

absl::Status AutodiffTest::Grad(bool adstack_enabled, bool checkpointing) {
  absl::Status status = transforms::autodiff::MakeGradKernel(
      kernel_, snodes_,
      {.adstack_enabled = adstack_enabled, .checkpointing = checkpointing});
  if (status.ok()) {
    absl::Status verified = ir::Verify(kernel_, {.snodes = &snodes_});
    EXPECT_TRUE(verified.ok()) << verified << "\n" << ir::PrintKernel(kernel_);
  }
  return status;
}

}  // namespace quadrants::autodiff_test
