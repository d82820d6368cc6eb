#include "quadrants/adstack/stack_spec.h"

#include <gtest/gtest.h>

namespace quadrants::adstack {
namespace {

ir::SizeExpr::Ptr Trips() { return ir::SizeExpr::Const(10); }

TEST(NeedsBoundsCheckTest, ExactStacksGoUncheckedUnlessChecksAreAsked) {
  ir::AdStackAllocaStmt constant(ir::PrimitiveType::kF32, 12);
  ir::AdStackAllocaStmt sized(ir::PrimitiveType::kF32, 0);
  sized.set_size_expr(Trips());
  for (const ir::AdStackAllocaStmt* s : {&constant, &sized}) {
    EXPECT_FALSE(NeedsBoundsCheck(*s, {}));
    EXPECT_TRUE(NeedsBoundsCheck(*s, {/*debug=*/true, false, false}));
    EXPECT_TRUE(NeedsBoundsCheck(*s, {false, /*check_out_of_bound=*/true,
                                      false}));
    EXPECT_TRUE(NeedsBoundsCheck(*s, {false, false, /*forced=*/true}));
  }
}

TEST(NeedsBoundsCheckTest, DefaultSizedStacksAreAlwaysChecked) {
  ir::AdStackAllocaStmt unbounded(ir::PrimitiveType::kI32, 0);
  EXPECT_FALSE(HasExactCapacity(unbounded, false));
  EXPECT_TRUE(NeedsBoundsCheck(unbounded, {}));
}

}  // namespace
}  // namespace quadrants::adstack
