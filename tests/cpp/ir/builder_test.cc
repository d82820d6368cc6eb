#include "quadrants/ir/builder.h"

#include <gtest/gtest.h>

#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"

namespace quadrants::ir {
namespace {

// Declaring a variable at the start of an enclosing block while filling a
// nested one must not disturb where the enclosing block continues.
TEST(IRBuilderTest, InsertAtBlockStartKeepsEnclosingInsertPoints) {
  Kernel kernel("k");
  IRBuilder b(&kernel);
  auto* loop = b.RangeFor(b.ConstI32(0), b.ConstI32(4));
  Stmt* var = nullptr;
  {
    auto in_loop = b.EnterBlock(loop->body());
    auto* branch = b.If(b.ConstBool(true));
    {
      auto in_then = b.EnterBlock(branch->true_block());
      var = b.InsertAt(loop->body(), 0,
                       std::make_unique<AllocaStmt>(PrimitiveType::kI32));
      b.LocalStore(var, b.ConstI32(1));
    }
    b.LocalLoad(var);  // after the if, in the loop body
  }
  b.ConstI32(99);  // after the loop
  ASSERT_TRUE(Verify(kernel, {.require_types = false}).ok())
      << Verify(kernel, {.require_types = false}) << PrintKernel(kernel);
  Block* body = loop->body();
  ASSERT_EQ(body->size(), 4u) << PrintKernel(kernel);
  EXPECT_TRUE(Isa<AllocaStmt>(body->at(0)));
  EXPECT_TRUE(Isa<IfStmt>(body->at(2)));
  EXPECT_TRUE(Isa<LocalLoadStmt>(body->at(3)));
  EXPECT_TRUE(Isa<ConstStmt>(kernel.body()->back()));
}

}  // namespace
}  // namespace quadrants::ir
