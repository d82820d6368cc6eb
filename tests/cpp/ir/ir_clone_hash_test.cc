// CloneKernel / CloneStmt and StructuralHash, including a check that the
// hash is the same in a separate process.
#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/hash.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/ir/walk.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::ir {
namespace {

using samples::Typed;

constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kU1 = PrimitiveType::kU1;

std::string PrintWithLocations(const Kernel& kernel) {
  return PrintKernel(kernel, PrintOptions{.locations = true});
}

std::vector<const Stmt*> AllStmts(const Block& block) {
  std::vector<const Stmt*> stmts;
  WalkBlock(block, [&](const Stmt* s) { stmts.push_back(s); });
  return stmts;
}

// ---- CloneKernel ------------------------------------------------------------

TEST(CloneKernelTest, CloneOfEverySampleKernelPrintsAndHashesIdentically) {
  for (const samples::SampleKernel& sample : samples::AllSampleKernels()) {
    const Kernel& original = *sample.kernel;
    SCOPED_TRACE(original.name());
    std::unique_ptr<Kernel> clone = CloneKernel(original);
    EXPECT_EQ(PrintKernel(*clone), PrintKernel(original));
    EXPECT_EQ(PrintWithLocations(*clone), PrintWithLocations(original));
    EXPECT_EQ(StructuralHash(*clone), StructuralHash(original));
    EXPECT_TRUE(Verify(*clone, sample.verify_options).ok());
  }
}

TEST(CloneKernelTest, CloneIsSelfContained) {
  for (const samples::SampleKernel& sample : samples::AllSampleKernels()) {
    SCOPED_TRACE(sample.kernel->name());
    std::unique_ptr<Kernel> clone = CloneKernel(*sample.kernel);
    std::vector<const Stmt*> originals = AllStmts(*sample.kernel->body());
    std::vector<const Stmt*> copies = AllStmts(*clone->body());
    ASSERT_EQ(copies.size(), originals.size());
    absl::flat_hash_set<const Stmt*> in_clone(copies.begin(), copies.end());
    for (const Stmt* original : originals) {
      EXPECT_FALSE(in_clone.contains(original));
    }
    for (const Stmt* copy : copies) {
      for (const Stmt* operand : copy->operands()) {
        EXPECT_TRUE(in_clone.contains(operand))
            << PrintStmt(*copy, StmtNumbering(*clone))
            << " refers outside the clone";
      }
    }
  }
}

TEST(CloneKernelTest, EditingTheCloneLeavesTheOriginalAlone) {
  std::unique_ptr<Kernel> original = samples::BuildControlFlowKernel();
  const std::string before = PrintWithLocations(*original);
  std::unique_ptr<Kernel> clone = CloneKernel(*original);
  clone->body()->at(0)->set_loc(SourceLocation{"elsewhere.py", 99});
  clone->body()->Erase(clone->body()->at(2));  // the outer loop
  EXPECT_EQ(PrintWithLocations(*original), before);
  EXPECT_NE(StructuralHash(*clone), StructuralHash(*original));
}

// ---- StructuralHash ---------------------------------------------------------

SourceLocation At(int line) {
  return SourceLocation{"scale.py", line};
}

// a[i] *= factor over a 1-D ndarray; the store sits on `store_line`.
std::unique_ptr<Kernel> BuildScaleKernel(float factor, int store_line = 5) {
  auto kernel = std::make_unique<Kernel>("scale", At(1));
  kernel->AddParam(KernelParam::Ndarray("a", kF32, 1));
  IRBuilder b(kernel.get());
  b.SetLocation(At(2));
  Stmt* zero = b.ConstI32(0);
  Stmt* n = b.NdarrayShape(0, 0);
  auto* loop = b.RangeFor(zero, n);
  auto body = b.EnterBlock(loop->body());
  b.SetLocation(At(3));
  Stmt* i = b.LoopIndex(loop);
  Stmt* ptr = b.NdarrayPtr(0, {i});
  Stmt* value = b.GlobalLoad(ptr);
  b.SetLocation(At(4));
  Stmt* scale = b.ConstF32(factor);
  Stmt* scaled = Typed(b.Mul(value, scale), kF32);
  b.SetLocation(At(store_line));
  b.GlobalStore(ptr, scaled);
  return kernel;
}

TEST(StructuralHashTest, SameStructureGivesSameHash) {
  EXPECT_EQ(StructuralHash(*BuildScaleKernel(2.0f)),
            StructuralHash(*BuildScaleKernel(2.0f)));
}

TEST(StructuralHashTest, ChangingOneConstantChangesTheHash) {
  const uint64_t base = StructuralHash(*BuildScaleKernel(2.0f));
  EXPECT_NE(StructuralHash(*BuildScaleKernel(3.0f)), base);
  // Constants print round-trip exact, so even one ulp matters, as does the
  // sign of zero.
  EXPECT_NE(StructuralHash(*BuildScaleKernel(std::nextafter(2.0f, 3.0f))),
            base);
  EXPECT_NE(StructuralHash(*BuildScaleKernel(0.0f)),
            StructuralHash(*BuildScaleKernel(-0.0f)));
}

TEST(StructuralHashTest, ChangingASourceLineChangesTheHash) {
  std::unique_ptr<Kernel> line5 = BuildScaleKernel(2.0f, 5);
  std::unique_ptr<Kernel> line6 = BuildScaleKernel(2.0f, 6);
  EXPECT_EQ(PrintKernel(*line5), PrintKernel(*line6));
  EXPECT_NE(StructuralHash(*line5), StructuralHash(*line6));
}

TEST(StructuralHashTest, NameParamsAndTypesAreHashed) {
  EXPECT_NE(StructuralHash(Kernel("a")), StructuralHash(Kernel("b")));

  auto with_param = [](KernelParam param) {
    Kernel kernel("k");
    kernel.AddParam(std::move(param));
    return StructuralHash(kernel);
  };
  const uint64_t base = with_param(KernelParam::Ndarray("a", kF32, 1));
  EXPECT_NE(with_param(KernelParam::Ndarray("a", kF32, 2)), base);
  EXPECT_NE(with_param(KernelParam::Ndarray("a", PrimitiveType::kF64, 1)),
            base);
  EXPECT_NE(with_param(KernelParam::Ndarray("b", kF32, 1)), base);
  EXPECT_NE(with_param(KernelParam::Field("a", kF32, 2)), base);
  EXPECT_NE(with_param(KernelParam::Field("a", kF32, 2)),
            with_param(KernelParam::Field("a", kF32, 4)));

  // Clearing the type of a result (as before type checking) changes it.
  std::unique_ptr<Kernel> untyped = BuildScaleKernel(2.0f);
  WalkKernel(*untyped, [](Stmt* s) {
    if (Isa<BinaryOpStmt>(s))
      s->set_type(DataType::Unknown());
  });
  EXPECT_NE(StructuralHash(*untyped), StructuralHash(*BuildScaleKernel(2.0f)));
}

// ---- CloneStmt --------------------------------------------------------------

// kernel clone_loop(n: i32) {
//   zero, n, var = alloca
//   loop = range_for zero, n {
//     i = loop_index; one; sum = i + one; total = sum + n
//     if (i < n) { var = total }
//   }
// }
struct LoopKernel {
  std::unique_ptr<Kernel> kernel;
  Stmt* zero;
  Stmt* n;
  Stmt* var;
  RangeForStmt* loop;
};

LoopKernel BuildLoopKernel() {
  LoopKernel k;
  k.kernel = std::make_unique<Kernel>("clone_loop", At(1));
  k.kernel->AddParam(KernelParam::Scalar("n", kI32));
  IRBuilder b(k.kernel.get());
  k.zero = b.ConstI32(0);
  k.n = b.ArgLoad(0);
  k.var = b.Alloca(kI32);
  k.loop = b.RangeFor(k.zero, k.n);
  auto body = b.EnterBlock(k.loop->body());
  Stmt* i = b.LoopIndex(k.loop);
  Stmt* one = b.ConstI32(1);
  Stmt* sum = Typed(b.Add(i, one), kI32);
  Stmt* total = Typed(b.Add(sum, k.n), kI32);
  auto* branch = b.If(Typed(b.Lt(i, k.n), kU1));
  auto then_scope = b.EnterBlock(branch->true_block());
  b.LocalStore(k.var, total);
  return k;
}

// Each copied statement's operand is the copy of the original operand when
// that lies inside `loop` (or is `loop`), and `outside(original)` otherwise.
template <typename Outside>
void ExpectRemapped(const RangeForStmt& loop, const RangeForStmt& copy,
                    const absl::flat_hash_map<const Stmt*, Stmt*>& remap,
                    Outside outside) {
  std::vector<const Stmt*> originals = AllStmts(*loop.body());
  std::vector<const Stmt*> copies = AllStmts(*copy.body());
  originals.insert(originals.begin(), &loop);
  copies.insert(copies.begin(), &copy);
  ASSERT_EQ(copies.size(), originals.size());
  for (size_t k = 0; k < originals.size(); ++k) {
    const Stmt* o = originals[k];
    const Stmt* c = copies[k];
    ASSERT_NE(o, c);
    ASSERT_EQ(c->kind(), o->kind());
    EXPECT_EQ(c->type(), o->type());
    ASSERT_EQ(c->num_operands(), o->num_operands());
    auto it = remap.find(o);
    ASSERT_NE(it, remap.end()) << "statement " << k << " missing from remap";
    EXPECT_EQ(it->second, c);
    for (size_t i = 0; i < o->num_operands(); ++i) {
      Stmt* from = o->operand(i);
      const bool inner = from == &loop || from->IsInside(&loop);
      EXPECT_EQ(c->operand(i), inner ? remap.at(from) : outside(from))
          << "statement " << k << " operand " << i;
    }
  }
}

TEST(CloneStmtTest, LoopCopyRemapsInnerOperandsAndKeepsOuterOnes) {
  LoopKernel k = BuildLoopKernel();
  absl::flat_hash_map<const Stmt*, Stmt*> remap;
  std::unique_ptr<Stmt> copy = CloneStmt(*k.loop, &remap);
  auto* loop_copy = DynCast<RangeForStmt>(copy.get());
  ASSERT_NE(loop_copy, nullptr);
  EXPECT_EQ(loop_copy->parent(), nullptr);
  EXPECT_EQ(remap.size(), 8u);  // the loop and the 7 statements inside it

  // Spot checks, then the exhaustive rule.
  EXPECT_EQ(loop_copy->begin(), k.zero);
  EXPECT_EQ(loop_copy->end(), k.n);
  auto* index_copy = DynCast<LoopIndexStmt>(loop_copy->body()->at(0));
  ASSERT_NE(index_copy, nullptr);
  EXPECT_EQ(index_copy->loop(), loop_copy);
  auto* if_copy = DynCast<IfStmt>(loop_copy->body()->back());
  ASSERT_NE(if_copy, nullptr);
  auto* store_copy = DynCast<LocalStoreStmt>(if_copy->true_block()->at(0));
  ASSERT_NE(store_copy, nullptr);
  EXPECT_EQ(store_copy->alloca(), k.var);
  EXPECT_EQ(store_copy->value(), loop_copy->body()->at(3));
  ExpectRemapped(*k.loop, *loop_copy, remap, [](Stmt* s) { return s; });

  // Placed after the original, the copy is well formed.
  k.kernel->body()->Insert(k.kernel->body()->IndexOf(k.loop) + 1,
                           std::move(copy));
  absl::Status status = Verify(*k.kernel);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(PrintKernel(*k.kernel), R"ir(kernel clone_loop(arg0 n: i32) {
  $0 : i32 = const 0
  $1 : i32 = arg_load arg0
  $2 : *i32 = alloca
  $3 = range_for $0, $1 {
    $4 : i32 = loop_index $3 axis 0
    $5 : i32 = const 1
    $6 : i32 = add $4, $5
    $7 : i32 = add $6, $1
    $8 : u1 = cmp_lt $4, $1
    $9 = if $8 {
      $10 = local_store $2, $7
    } else {
    }
  }
  $11 = range_for $0, $1 {
    $12 : i32 = loop_index $11 axis 0
    $13 : i32 = const 1
    $14 : i32 = add $12, $13
    $15 : i32 = add $14, $1
    $16 : u1 = cmp_lt $12, $1
    $17 = if $16 {
      $18 = local_store $2, $15
    } else {
    }
  }
}
)ir");
}

TEST(CloneStmtTest, OuterOperandsGoThroughAGivenRemap) {
  LoopKernel k = BuildLoopKernel();
  IRBuilder b(k.kernel.get());
  Stmt* replacement = b.ConstI32(10);  // appended to the root block
  absl::flat_hash_map<const Stmt*, Stmt*> remap = {{k.n, replacement}};
  std::unique_ptr<Stmt> copy = CloneStmt(*k.loop, &remap);
  auto* loop_copy = DynCast<RangeForStmt>(copy.get());
  ASSERT_NE(loop_copy, nullptr);
  EXPECT_EQ(remap.size(), 9u);
  EXPECT_EQ(loop_copy->begin(), k.zero);
  EXPECT_EQ(loop_copy->end(), replacement);
  ExpectRemapped(*k.loop, *loop_copy, remap,
                 [&](Stmt* s) { return s == k.n ? replacement : s; });
}

TEST(CloneStmtTest, WithoutRemapInnerOperandsStillPointIntoTheCopy) {
  LoopKernel k = BuildLoopKernel();
  std::unique_ptr<Stmt> copy = CloneStmt(*k.loop);
  for (const Stmt* s :
       AllStmts(*static_cast<RangeForStmt*>(copy.get())->body())) {
    for (const Stmt* operand : s->operands()) {
      const bool outer =
          operand == k.zero || operand == k.n || operand == k.var;
      EXPECT_TRUE(outer || operand == copy.get() ||
                  operand->IsInside(copy.get()))
          << StmtKindName(s->kind()) << " refers into the original loop";
    }
  }
}

TEST(CloneStmtTest, TaskCopyTakesItsBoundsFromItsOwnPrologue) {
  std::unique_ptr<Kernel> kernel = samples::BuildOffloadedKernel();
  const auto* task = DynCast<OffloadedTaskStmt>(kernel->body()->at(0));
  ASSERT_NE(task, nullptr);
  std::unique_ptr<Stmt> copy = CloneStmt(*task);
  auto* task_copy = DynCast<OffloadedTaskStmt>(copy.get());
  ASSERT_NE(task_copy, nullptr);
  EXPECT_EQ(task_copy->task_kind(), TaskKind::kRangeFor);
  ASSERT_EQ(task_copy->prologue()->size(), 2u);
  EXPECT_EQ(task_copy->begin(), task_copy->prologue()->at(0));
  EXPECT_EQ(task_copy->end(), task_copy->prologue()->at(1));
  auto* index = DynCast<LoopIndexStmt>(task_copy->body()->at(0));
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->loop(), task_copy);

  kernel->body()->Append(std::move(copy));
  absl::Status status =
      Verify(*kernel, VerifyOptions{.snodes = &samples::SampleTree()});
  EXPECT_TRUE(status.ok()) << status;
}

// ---- Cross-process stability ------------------------------------------------

constexpr char kHelperEnv[] = "QD_IR_HASH_HELPER";
constexpr char kHelperTest[] = "StructuralHashHelper.PrintHashes";

std::vector<std::string> SampleHashLines() {
  std::vector<std::string> lines;
  for (const samples::SampleKernel& sample : samples::AllSampleKernels()) {
    lines.push_back(
        absl::StrFormat("HASH=%016x", StructuralHash(*sample.kernel)));
  }
  lines.push_back(
      absl::StrFormat("HASH=%016x", StructuralHash(*BuildScaleKernel(0.1f))));
  return lines;
}

// Not a check of its own: prints the hashes when CrossProcessStable re-runs
// this binary with QD_IR_HASH_HELPER=1, and skips otherwise.
TEST(StructuralHashHelper, PrintHashes) {
  if (std::getenv(kHelperEnv) == nullptr) {
    GTEST_SKIP() << "helper for StructuralHashTest.CrossProcessStable";
  }
  for (const std::string& line : SampleHashLines()) {
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

// Runs this test binary again with only the helper test enabled and returns
// the HASH= lines it printed.
std::vector<std::string> HashLinesFromChildProcess() {
  char exe[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length <= 0) {
    ADD_FAILURE() << "cannot resolve /proc/self/exe";
    return {};
  }
  exe[length] = '\0';
  if (absl::StrContains(exe, "'")) {
    ADD_FAILURE() << "unexpected quote in test binary path " << exe;
    return {};
  }
  // Drop the variables through which Bazel and gtest would make the child
  // write (or delete) this run's result, shard or exit-marker files.
  const std::string command = absl::StrCat(
      "env -u XML_OUTPUT_FILE -u GTEST_OUTPUT -u TEST_PREMATURE_EXIT_FILE "
      "-u TEST_SHARD_STATUS_FILE -u GTEST_SHARD_STATUS_FILE "
      "-u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u TESTBRIDGE_TEST_ONLY ",
      kHelperEnv, "=1 '", exe, "' --gtest_filter=", kHelperTest, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << command;
    return {};
  }
  std::vector<std::string> lines;
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    output += buffer;
    absl::string_view line = absl::StripTrailingAsciiWhitespace(buffer);
    if (absl::StartsWith(line, "HASH="))
      lines.emplace_back(line);
  }
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << "child failed:\n" << output;
  return lines;
}

TEST(StructuralHashTest, CrossProcessStable) {
  const std::vector<std::string> expected = SampleHashLines();
  const std::vector<std::string> first = HashLinesFromChildProcess();
  const std::vector<std::string> second = HashLinesFromChildProcess();
  EXPECT_EQ(first, expected);
  EXPECT_EQ(second, expected);
}

}  // namespace
}  // namespace quadrants::ir
