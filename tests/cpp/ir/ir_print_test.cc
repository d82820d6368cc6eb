// Golden tests for the IR printer: every statement kind, every parameter
// kind, nested blocks, offloaded tasks and source locations.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "absl/strings/string_view.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/ir/walk.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::ir {
namespace {

using samples::SampleTree;
using samples::Typed;

const VerifyOptions kTyped{.require_types = true, .snodes = &SampleTree()};
const VerifyOptions kUntyped{.require_types = false, .snodes = &SampleTree()};

// Verifies `kernel` (goldens of malformed IR would be worthless) and
// compares its printed form with `golden`.
void ExpectPrints(const Kernel& kernel, const VerifyOptions& options,
                  absl::string_view golden) {
  absl::Status status = Verify(kernel, options);
  ASSERT_TRUE(status.ok()) << status << "\n" << PrintKernel(kernel);
  EXPECT_EQ(PrintKernel(kernel), golden);
}

TEST(IrPrintTest, ParamsOfEveryKindAndGlobalMemory) {
  ExpectPrints(
      *samples::BuildParamsKernel(), kTyped,
      R"ir(kernel params(arg0 n: i32, arg1 a: ndarray<f32, 2>, arg2 x: field<f32> snode2) {
  $0 : i32 = arg_load arg0
  $1 : i32 = const 0
  $2 : *f32 = ndarray_ptr arg1[$0, $1]
  $3 : i32 = ndarray_shape arg1.shape[1]
  $4 : *f32 = field_ptr snode2[$0]
  $5 : f32 = global_load $2
  $6 = global_store $4, $5
  $7 : f32 = atomic_add $2, $5
}
)ir");
}

TEST(IrPrintTest, UntypedArithmeticPrintsUnknown) {
  ExpectPrints(*samples::BuildArithKernel(/*typed=*/false), kUntyped,
               R"ir(kernel arith(arg0 x: f32) {
  $0 : f32 = arg_load arg0
  $1 : *f32 = alloca
  $2 = local_store $1, $0
  $3 : f32 = local_load $1
  $4 : unknown = neg $3
  $5 : i32 = cast $3
  $6 : unknown = mul $3, $4
  $7 : unknown = cmp_lt $3, $0
  $8 : unknown = select $7, $3, $6
}
)ir");
}

TEST(IrPrintTest, TypedArithmetic) {
  ExpectPrints(*samples::BuildArithKernel(/*typed=*/true), kTyped,
               R"ir(kernel arith_typed(arg0 x: f32) {
  $0 : f32 = arg_load arg0
  $1 : *f32 = alloca
  $2 = local_store $1, $0
  $3 : f32 = local_load $1
  $4 : f32 = neg $3
  $5 : i32 = cast $3
  $6 : f32 = mul $3, $4
  $7 : u1 = cmp_lt $3, $0
  $8 : f32 = select $7, $3, $6
}
)ir");
}

TEST(IrPrintTest, NestedLoopsBranchesWhileAndAssert) {
  ExpectPrints(*samples::BuildControlFlowKernel(), kTyped,
               R"ir(kernel control(arg0 n: i32) {
  $0 : i32 = const 0
  $1 : i32 = arg_load arg0
  $2 = range_for $0, $1 {
    $3 : i32 = loop_index $2 axis 0
    $4 = range_for $0, $3 {
      $5 : i32 = loop_index $4 axis 0
      $6 : u1 = cmp_lt $5, $3
      $7 = if $6 {
        $8 = continue
      } else {
        $9 = break
      }
    }
    $10 = while {
      $11 : u1 = cmp_lt $3, $1
      $12 = if $11 {
        $13 = break
      } else {
        $14 = continue
      }
    }
    $15 : u1 = cmp_lt $3, $1
    $16 = assert $15, "i = %d out of range [0, %d)" ($3, $1)
  }
}
)ir");
}

TEST(IrPrintTest, OffloadedTasksWithPrologueBounds) {
  ExpectPrints(*samples::BuildOffloadedKernel(), kTyped,
               R"ir(kernel offloaded(arg0 a: ndarray<f32, 1>) {
  $0 = offloaded range_for [$1, $2) {
    prologue {
      $1 : i32 = const 0
      $2 : i32 = ndarray_shape arg0.shape[0]
    }
    body {
      $3 : i32 = loop_index $0 axis 0
      $4 : *f32 = ndarray_ptr arg0[$3]
      $5 : f32 = global_load $4
      $6 : f32 = const 0.25
      $7 : u1 = cmp_gt $5, $6
      $8 : i32 = adstack_row $7 gate=a[i0] > 0.25
      $9 : f32 = const 0.5
      $10 = global_store $4, $9
    }
  }
  $11 = offloaded struct_for snode1 {
    prologue {
    }
    body {
      $12 : i32 = loop_index $11 axis 0
      $13 : *f32 = field_ptr snode2[$12]
      $14 : f32 = const 0.10000000149011612
      $15 : f32 = atomic_add $13, $14
    }
  }
  $16 = offloaded serial {
    prologue {
    }
    body {
      $17 : i32 = const 0
      $18 : *f32 = field_ptr snode2[$17]
      $19 : f32 = global_load $18
      $20 : *f32 = ndarray_ptr arg0[$17]
      $21 = global_store $20, $19
      $22 = while {
        $23 = break
      }
    }
  }
}
)ir");
}

TEST(IrPrintTest, StructForWithEmptyElse) {
  ExpectPrints(*samples::BuildStructForKernel(), kTyped,
               R"ir(kernel struct_loop(arg0 y: field<f32> snode4) {
  $0 = struct_for snode3 {
    $1 : i32 = loop_index $0 axis 0
    $2 : i32 = loop_index $0 axis 1
    $3 : *f32 = field_ptr snode4[$1, $2]
    $4 : u1 = cmp_lt $1, $2
    $5 = if $4 {
      $6 : f32 = const 1
      $7 = global_store $3, $6
    } else {
    }
  }
}
)ir");
}

TEST(IrPrintTest, AdStackStatements) {
  ExpectPrints(*samples::BuildAdStackKernel(), kTyped,
               R"ir(kernel adstack(arg0 a: ndarray<f32, 1>) {
  $0 : adstack<f32> = adstack_alloca max_size=16
  $1 : adstack<i32> = adstack_alloca max_size=0 size_expr=(shape(arg0, 0) + 1)
  $2 : f32 = const 2
  $3 = adstack_push $0, $2
  $4 : i32 = const 7
  $5 = adstack_push $1, $4
  $6 : f32 = adstack_load_top $0
  $7 : f32 = adstack_load_top_adj $0
  $8 = adstack_acc_adjoint $0, $6
  $9 : i32 = adstack_load_top $1
  $10 = adstack_pop $1
  $11 = adstack_pop $0
  $12 : adstack<f32> = adstack_alloca max_size=16 checkpoint_group=0 checkpoints
  $13 : i32 = adstack_capacity $12
}
)ir");
}

TEST(IrPrintTest, PrintRandomAndThreadIndex) {
  ExpectPrints(*samples::BuildOutputKernel(), kTyped,
               R"ir(kernel output(arg0 n: i32) {
  $0 : i32 = arg_load arg0
  $1 : f32 = random
  $2 : i32 = thread_index
  $3 = print "n = ", $0:"%5d", ", r = \"", $1:"", "\", t = ", $2:"", "\n"
}
)ir");
}

TEST(IrPrintTest, RealFunctionsAfterTheKernel) {
  ExpectPrints(*samples::BuildRealFunctionKernel(), kTyped,
               R"ir(kernel calls(arg0 n: i32) {
  $0 : *i32 = alloca
  $1 : i32 = arg_load arg0
  $2 = call fn0 tri($1, $0)
  $3 : i32 = local_load $0
}
function fn0 tri(v: i32, <result 0>: *i32) {
  $0 : i32 = func_arg 0
  $1 : *i32 = func_arg 1
  $2 : *i32 = alloca
  $3 : i32 = const 0
  $4 : u1 = cmp_eq $0, $3
  $5 = if $4 {
    $6 = global_store $1, $3
    $7 = return
  } else {
  }
  $8 : i32 = const 1
  $9 : i32 = sub $0, $8
  $10 = call fn0 tri($9, $2)
  $11 : i32 = local_load $2
  $12 : i32 = add $11, $0
  $13 = global_store $1, $12
  $14 = return
}
)ir");
}

TEST(IrPrintTest, PrintSimtStatementsAndBlockDim) {
  auto kernel = samples::BuildSimtKernel();
  absl::Status status = Verify(*kernel, kTyped);
  ASSERT_TRUE(status.ok()) << status;
  const std::string text = PrintKernel(*kernel);
  for (const char* piece :
       {"range_for", "#block_dim 64", "*f32 = shared_array 64", "shared_ptr $",
        "= block_thread_idx", "= block_sync", "f32 = subgroup_shuffle_down $",
        "i32 = subgroup_invocation_id", "u64 = subgroup_ballot $",
        "i32 = block_sync_count $", "= grid_mem_fence"}) {
    EXPECT_NE(text.find(piece), std::string::npos) << piece << " in\n" << text;
  }
}

TEST(IrPrintTest, SampleKernelsUseEveryStatementKind) {
  std::set<StmtKind> seen;
  for (const samples::SampleKernel& sample : samples::AllSampleKernels()) {
    WalkKernel(*sample.kernel, [&](const Stmt* s) { seen.insert(s->kind()); });
  }
#define QD_EXPECT_KIND_SEEN(name)                                   \
  EXPECT_TRUE(seen.count(StmtKind::k##name))                        \
      << StmtKindName(StmtKind::k##name) << " is not covered by a " \
      << "golden test";
  QD_FOR_EACH_STMT_KIND(QD_EXPECT_KIND_SEEN)
#undef QD_EXPECT_KIND_SEEN
}

TEST(IrPrintTest, LocationsOption) {
  Kernel kernel("located", SourceLocation{"k.py", 3});
  IRBuilder b(&kernel);
  // Before any SetLocation, statements inherit the kernel's location.
  Stmt* flag = b.ConstBool(true);
  b.SetLocation(SourceLocation{"k.py", 5});
  auto* branch = b.If(flag);
  {
    auto scope = b.EnterBlock(branch->true_block());
    b.SetLocation(SourceLocation{"lib/other.py", 17});
    b.ConstI32(1);
  }
  ASSERT_TRUE(Verify(kernel).ok());
  EXPECT_EQ(PrintKernel(kernel, PrintOptions{.locations = true}),
            R"ir(kernel located()  @k.py:3 {
  $0 : u1 = const 1  @k.py:3
  $1 = if $0  @k.py:5 {
    $2 : i32 = const 1  @lib/other.py:17
  } else {
  }
}
)ir");
  // The default leaves locations out.
  EXPECT_EQ(PrintKernel(kernel), R"ir(kernel located() {
  $0 : u1 = const 1
  $1 = if $0 {
    $2 : i32 = const 1
  } else {
  }
}
)ir");
}

TEST(IrPrintTest, UnknownLocationIsSpelledOut) {
  Kernel kernel("nowhere");
  IRBuilder b(&kernel);
  b.ConstI64(-5);
  EXPECT_EQ(PrintKernel(kernel, PrintOptions{.locations = true}),
            "kernel nowhere()  @<unknown location> {\n"
            "  $0 : i64 = const -5  @<unknown location>\n"
            "}\n");
}

TEST(IrPrintTest, AssertMessageIsQuoted) {
  Kernel kernel("quoting");
  IRBuilder b(&kernel);
  Stmt* flag = b.ConstBool(false);
  b.Assert(flag, "say \"hi\"\nto C:\\dir");
  EXPECT_EQ(PrintKernel(kernel), R"ir(kernel quoting() {
  $0 : u1 = const 0
  $1 = assert $0, "say \"hi\"\nto C:\\dir"
}
)ir");
}

TEST(IrPrintTest, ConstantsPrintRoundTripExact) {
  Kernel kernel("constants");
  IRBuilder b(&kernel);
  b.Const(Constant::Int(PrimitiveType::kU64, -1));
  b.Const(Constant::Int(PrimitiveType::kI8, 200));
  b.ConstF64(0.1);
  b.ConstF64(-0.0);
  b.Const(Constant::Float(PrimitiveType::kF16, 0.1));
  EXPECT_EQ(PrintKernel(kernel), R"ir(kernel constants() {
  $0 : u64 = const 18446744073709551615
  $1 : i8 = const -56
  $2 : f64 = const 0.10000000000000001
  $3 : f64 = const -0
  $4 : f16 = const 0.0999755859375
}
)ir");
}

TEST(IrPrintTest, PrintStmtOfOperandOutsideKernel) {
  Kernel kernel("detached");
  IRBuilder b(&kernel);
  Stmt* one = b.ConstI32(1);
  ConstStmt outside(Constant::Int(PrimitiveType::kI32, 2));
  auto* sum = Typed(b.Add(one, &outside), PrimitiveType::kI32);
  StmtNumbering numbering(kernel);
  EXPECT_EQ(PrintStmt(*sum, numbering), "$1 : i32 = add $0, $?");
  EXPECT_EQ(numbering.Name(&outside), "$?");
}

}  // namespace
}  // namespace quadrants::ir
