// A kernel under construction, the fields it may address and the pipeline
// steps the autodiff golden tests run on it.
#ifndef TESTS_CPP_TRANSFORMS_AUTODIFF_AUTODIFF_FIXTURE_H_
#define TESTS_CPP_TRANSFORMS_AUTODIFF_AUTODIFF_FIXTURE_H_

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/transforms/pipeline.h"

namespace quadrants::autodiff_test {

class AutodiffTest : public ::testing::Test {
 protected:
  // Fields (place SNode ids), all f32 over dense[i:16] unless noted:
  // x and y with gradient and dual companions, n (i32, no companions),
  // and f over dense[t:8, i:16] with a gradient. Golden scripts name them
  // by id: x 2 (x.grad 3, x.dual 4), y 5 (6, 7), n 8, f 10 (f.grad 11).
  struct Fields {
    int x, y, n, f;
  };

  AutodiffTest();

  // Subsequent statements come from k.py:`line`.
  void At(int line);

  // Type check, simplify and offload, and then the autodiff step the
  // options ask for, with the final cleanup.
  absl::Status Lower(transforms::PipelineOptions options = {});
  // Lower with reverse mode; the adstack on. Checkpointing is off unless
  // asked: the cleanup tests check which plain stacks survive.
  absl::Status LowerReverse(bool stack_trig_derivatives = false,
                            bool checkpointing = false);
  // Reverse mode alone on the lowered kernel: the gradient kernel as
  // MakeGradKernel emits it, before the cleanup. It must verify. Loops are
  // reversed unsegmented unless `checkpointing` asks for the launch-chosen
  // schedule (tests of the plain reversal's exact IR leave it off).
  absl::Status Grad(bool adstack_enabled = true, bool checkpointing = false);
  // Lower without autodiff, then Grad.
  absl::Status MakeGrad(bool adstack_enabled = true,
                        bool checkpointing = false);

  // Whether `status` is an error of `kind` with exactly `message`; the
  // failure shows what it is instead.
  static ::testing::AssertionResult IsError(const absl::Status& status,
                                            ErrorKind kind,
                                            const std::string& message);

  ir::SNodeTree snodes_;
  Fields fields_;
  ir::Kernel kernel_;
  ir::IRBuilder b_;
};

}  // namespace quadrants::autodiff_test

#endif  // TESTS_CPP_TRANSFORMS_AUTODIFF_AUTODIFF_FIXTURE_H_
