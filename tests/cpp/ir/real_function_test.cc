// Real functions in the IR: func_arg, call and return statements, printed,
// verified, cloned and hashed with the kernel that owns the function.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/hash.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"

namespace quadrants::ir {
namespace {

using ::testing::HasSubstr;

constexpr PrimitiveType kI32 = PrimitiveType::kI32;

// kernel k(n: i32): r = alloca; call twice(n, &r); store r to arr[0]
// function twice(v: i32, out: *i32): *out = v + v; return
struct Sample {
  std::unique_ptr<Kernel> kernel;
  Function* fn = nullptr;
  Stmt* result_store = nullptr;  // the callee's store through `out`
  FuncCallStmt* call = nullptr;
};

Sample Build() {
  Sample s;
  s.kernel = std::make_unique<Kernel>("k", SourceLocation{"k.py", 1});
  s.kernel->AddParam(KernelParam::Scalar("n", kI32));
  s.kernel->AddParam(KernelParam::Ndarray("arr", kI32, 1));
  const int index = s.kernel->AddFunction(std::make_unique<Function>(
      *s.kernel, "twice", SourceLocation{"k.py", 10},
      std::vector<FunctionParam>{{"v", DataType::Scalar(kI32)},
                                 {"out", DataType::Pointer(kI32)}}));
  s.fn = s.kernel->functions()[index].get();
  {
    IRBuilder b(&s.fn->scope());
    auto* v = b.Make<FuncArgStmt>(0, DataType::Scalar(kI32));
    auto* out = b.Make<FuncArgStmt>(1, DataType::Pointer(kI32));
    auto* sum = b.Add(v, v);
    sum->set_type(DataType::Scalar(kI32));
    s.result_store = b.GlobalStore(out, sum);
    b.Make<ReturnStmt>();
  }
  IRBuilder b(s.kernel.get());
  auto* r = b.Alloca(kI32);
  auto* n = b.ArgLoad(0);
  s.call = b.Make<FuncCallStmt>(
      index, "twice",
      std::vector<DataType>{DataType::Scalar(kI32), DataType::Pointer(kI32)},
      std::vector<Stmt*>{n, r});
  auto* loaded = b.LocalLoad(r);
  b.GlobalStore(b.NdarrayPtr(1, {b.ConstI32(0)}), loaded);
  return s;
}

TEST(RealFunctionTest, PrintsCallsAndFunctionBodies) {
  Sample s = Build();
  const std::string text = PrintKernel(*s.kernel);
  EXPECT_THAT(text, HasSubstr("$2 = call fn0 twice($1, $0)"));
  EXPECT_THAT(text, HasSubstr("function fn0 twice(v: i32, out: *i32) {\n"
                              "  $0 : i32 = func_arg 0\n"
                              "  $1 : *i32 = func_arg 1\n"
                              "  $2 : i32 = add $0, $0\n"
                              "  $3 = global_store $1, $2\n"
                              "  $4 = return\n"
                              "}\n"));
}

TEST(RealFunctionTest, WellFormedKernelVerifies) {
  Sample s = Build();
  absl::Status status = Verify(*s.kernel);
  EXPECT_TRUE(status.ok()) << status << "\n" << PrintKernel(*s.kernel);
}

TEST(RealFunctionTest, RejectsArgumentCountMismatch) {
  Sample s = Build();
  IRBuilder b(s.kernel.get());
  b.SetLocation(SourceLocation{"k.py", 42});
  b.Make<FuncCallStmt>(0, "twice",
                       std::vector<DataType>{DataType::Scalar(kI32)},
                       std::vector<Stmt*>{b.ConstI32(1)});
  absl::Status status = Verify(*s.kernel);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("function 'twice' takes 2 arguments, 1 given"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("k.py:42"));
}

TEST(RealFunctionTest, RejectsPointerArgumentThatIsNotALocal) {
  Sample s = Build();
  IRBuilder b(s.kernel.get());
  auto* elem = b.NdarrayPtr(1, {b.ConstI32(0)});
  b.Make<FuncCallStmt>(
      0, "twice",
      std::vector<DataType>{DataType::Scalar(kI32), DataType::Pointer(kI32)},
      std::vector<Stmt*>{b.ConstI32(1), elem});
  absl::Status status = Verify(*s.kernel);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("argument 1 must be the address of a local"));
}

TEST(RealFunctionTest, RejectsCallOfUnknownFunction) {
  Sample s = Build();
  IRBuilder b(s.kernel.get());
  b.Make<FuncCallStmt>(3, "ghost", std::vector<DataType>{},
                       std::vector<Stmt*>{});
  absl::Status status = Verify(*s.kernel);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("the kernel has no function 3"));
}

TEST(RealFunctionTest, RejectsFuncArgAndReturnOutsideAFunction) {
  {
    Sample s = Build();
    IRBuilder b(s.kernel.get());
    b.Make<FuncArgStmt>(0, DataType::Scalar(kI32));
    absl::Status status = Verify(*s.kernel);
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("func_arg outside of a function"));
  }
  {
    Sample s = Build();
    IRBuilder b(s.kernel.get());
    b.Make<ReturnStmt>();
    absl::Status status = Verify(*s.kernel);
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("return outside of a function"));
  }
}

TEST(RealFunctionTest, RejectsFuncArgOfTheWrongType) {
  Sample s = Build();
  IRBuilder b(&s.fn->scope());
  b.Make<FuncArgStmt>(1, DataType::Scalar(kI32));  // parameter 1 is *i32
  absl::Status status = Verify(*s.kernel);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("func_arg 1"));
}

TEST(RealFunctionTest, CloneCopiesFunctionsAndHashSeesTheirBodies) {
  Sample s = Build();
  std::unique_ptr<Kernel> copy = CloneKernel(*s.kernel);
  ASSERT_EQ(copy->functions().size(), 1u);
  EXPECT_EQ(PrintKernel(*copy), PrintKernel(*s.kernel));
  EXPECT_EQ(StructuralHash(*copy), StructuralHash(*s.kernel));
  EXPECT_TRUE(Verify(*copy).ok());
  // The copy's function body is its own.
  EXPECT_NE(copy->functions()[0]->body()->at(0),
            s.kernel->functions()[0]->body()->at(0));

  // Two kernels that differ only in a function body hash differently.
  Sample other = Build();
  auto* add = static_cast<BinaryOpStmt*>(other.fn->body()->at(2));  // v + v
  add->set_operand(1, other.fn->body()->at(0));
  IRBuilder b(&other.fn->scope());
  b.SetInsertPoint(other.fn->body(), 2);
  auto* one = b.ConstI32(1);
  add->set_operand(1, one);
  EXPECT_NE(StructuralHash(*other.kernel), StructuralHash(*s.kernel));
}

}  // namespace
}  // namespace quadrants::ir
