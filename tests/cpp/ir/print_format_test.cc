// The print and random statements through the IR tools (printer, cloner,
// hash, verifier) and the host-side formatting of print records.
#include "quadrants/ir/print_format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/hash.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"

namespace quadrants::ir {
namespace {

constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kU32 = PrimitiveType::kU32;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kF64 = PrimitiveType::kF64;
constexpr PrimitiveType kU1 = PrimitiveType::kU1;
constexpr PrimitiveType kI8 = PrimitiveType::kI8;

int64_t FloatBits(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

TEST(PrintSpec, AcceptsConversionsThatFitTheType) {
  EXPECT_TRUE(IsValidPrintSpec("", kI32));
  EXPECT_TRUE(IsValidPrintSpec("%d", kI32));
  EXPECT_TRUE(IsValidPrintSpec("%-+ #08.3i", kI32));
  EXPECT_TRUE(IsValidPrintSpec("%u", kU32));
  EXPECT_TRUE(IsValidPrintSpec("%x", kI32));
  EXPECT_TRUE(IsValidPrintSpec("%u", kU1));
  EXPECT_TRUE(IsValidPrintSpec("%.3f", kF32));
  EXPECT_TRUE(IsValidPrintSpec("%99.99e", kF64));
  EXPECT_FALSE(IsValidPrintSpec("%d", kF32));
  EXPECT_FALSE(IsValidPrintSpec("%f", kI32));
  EXPECT_FALSE(IsValidPrintSpec("%u", kI32));
  EXPECT_FALSE(IsValidPrintSpec("%d", kU32));
  EXPECT_FALSE(IsValidPrintSpec("%s", kI32));
  EXPECT_FALSE(IsValidPrintSpec("%n", kI32));
  EXPECT_FALSE(IsValidPrintSpec("%lld", kI32));
  EXPECT_FALSE(IsValidPrintSpec("%100d", kI32));
  EXPECT_FALSE(IsValidPrintSpec("%.d", kI32));
  EXPECT_FALSE(IsValidPrintSpec("%*d", kI32));
  EXPECT_FALSE(IsValidPrintSpec("d", kI32));
  EXPECT_FALSE(IsValidPrintSpec("%d%d", kI32));
  EXPECT_FALSE(IsValidPrintSpec(std::string("%\0d", 3), kI32));
}

TEST(PrintSpec, FormatsLikePrintf) {
  EXPECT_EQ(FormatPrintValue("", kI32, -5), "-5");
  EXPECT_EQ(FormatPrintValue("", PrimitiveType::kU64, -1),
            "18446744073709551615");
  EXPECT_EQ(FormatPrintValue("", kU1, 1), "True");
  EXPECT_EQ(FormatPrintValue("", kU1, 0), "False");
  EXPECT_EQ(FormatPrintValue("", kF32, FloatBits(1.0)), "1.000000");
  EXPECT_EQ(FormatPrintValue("%.2e", kF64, FloatBits(233.3)), "2.33e+02");
  EXPECT_EQ(FormatPrintValue("%05d", kI32, 42), "00042");
  EXPECT_EQ(FormatPrintValue("%.10d", kI32, 3), "0000000003");
  // Hex shows the value's own width, not its 64-bit extension.
  EXPECT_EQ(FormatPrintValue("%x", kI8, -1), "ff");
  EXPECT_EQ(FormatPrintValue("%#X", kI32, -1), "0XFFFFFFFF");
}

TEST(PrintSpec, FormatsRecords) {
  PrintSite site{{"x = ", " at ", "\n"}, {"%.1f", ""}, {kF32, kI32}, {}};
  ASSERT_TRUE(IsValidPrintSite(site));
  const int64_t values[2] = {FloatBits(0.25), 7};
  EXPECT_EQ(FormatPrintRecord(site, values), "x = 0.2 at 7\n");
  site.pieces.pop_back();
  EXPECT_FALSE(IsValidPrintSite(site));
}

std::unique_ptr<Kernel> PrintingKernel(const std::string& text) {
  auto k = std::make_unique<Kernel>("printing", SourceLocation{"p.py", 1});
  k->AddParam(KernelParam::Scalar("n", kI32));
  IRBuilder b(k.get());
  b.SetLocation({"p.py", 2});
  Stmt* n = b.ArgLoad(0);
  Stmt* r = b.Random(kF32);
  b.Print({text, " ", "\n"}, {"", "%.3f"}, {n, r});
  return k;
}

TEST(PrintStatement, PrintsClonesHashesAndVerifies) {
  auto k = PrintingKernel("n = \"quoted\"");
  const std::string text = PrintKernel(*k);
  EXPECT_TRUE(absl::StrContains(text, "random")) << text;
  EXPECT_TRUE(absl::StrContains(text, R"(print "n = \"quoted\"")")) << text;
  EXPECT_TRUE(absl::StrContains(text, R"(:"%.3f", "\n")")) << text;
  auto clone = CloneKernel(*k);
  EXPECT_EQ(PrintKernel(*clone), text);
  EXPECT_EQ(StructuralHash(*clone), StructuralHash(*k));
  // The text is part of the kernel's identity.
  EXPECT_NE(StructuralHash(*PrintingKernel("m = ")), StructuralHash(*k));
  EXPECT_TRUE(Verify(*k).ok()) << Verify(*k);
}

TEST(PrintStatement, VerifierRejectsBadSites) {
  auto k = std::make_unique<Kernel>("bad", SourceLocation{"p.py", 1});
  k->AddParam(KernelParam::Scalar("n", kI32));
  IRBuilder b(k.get());
  Stmt* n = b.ArgLoad(0);
  b.Print({"a", "b"}, {"%f"}, {n});  // %f on an i32
  absl::Status status = Verify(*k);
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(), "format spec")) << status;
}

}  // namespace
}  // namespace quadrants::ir
