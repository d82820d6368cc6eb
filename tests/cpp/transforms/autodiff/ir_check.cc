#include "tests/cpp/transforms/autodiff/ir_check.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "quadrants/ir/printer.h"

namespace quadrants::ir_check {
namespace {

enum class Kind { kCheck, kNext, kNot };

struct Directive {
  Kind kind;
  std::string pattern;
  int script_line;  // 1-based, for messages
};

constexpr struct {
  absl::string_view prefix;
  Kind kind;
} kPrefixes[] = {{"CHECK:", Kind::kCheck},
                 {"CHECK-NEXT:", Kind::kNext},
                 {"CHECK-NOT:", Kind::kNot}};

absl::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kCheck:
      return "CHECK";
    case Kind::kNext:
      return "CHECK-NEXT";
    case Kind::kNot:
      return "CHECK-NOT";
  }
  return "?";
}

std::string Describe(const Directive& d) {
  return absl::StrCat(KindName(d.kind), ": ", d.pattern, " (script line ",
                      d.script_line, ")");
}

absl::StatusOr<std::vector<Directive>> Parse(absl::string_view script) {
  std::vector<Directive> directives;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(script, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "//"))
      continue;
    std::optional<Directive> directive;
    for (const auto& [prefix, kind] : kPrefixes) {
      if (absl::StartsWith(line, prefix)) {
        directive = Directive{
            kind,
            std::string(absl::StripAsciiWhitespace(line.substr(prefix.size()))),
            number};
        break;
      }
    }
    // A misspelt directive would otherwise check nothing.
    if (!directive || directive->pattern.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("script line ", number,
                       " is not a directive with a pattern: ", line));
    }
    directives.push_back(*std::move(directive));
  }
  if (!directives.empty() && directives.front().kind == Kind::kNext)
    return absl::InvalidArgumentError("CHECK-NEXT needs a match before it");
  return directives;
}

std::string Escape(absl::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (absl::StrContains(R"(\^$.|?*+()[]{})", c))
      out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// A statement name, not followed by more digits (so $1 does not match the
// start of $12).
constexpr absl::string_view kStmtName = R"(\$[0-9]+(?![0-9]))";
constexpr absl::string_view kNoMoreDigits = "(?![0-9])";

// A point in the text: a line and a column in it.
struct Position {
  size_t line = 0;
  size_t column = 0;
};

struct Found {
  Position begin, end;
  std::smatch groups;
};

// A pattern turned into a regular expression under the current bindings.
struct Compiled {
  std::regex regex;
  std::vector<std::string> binds;  // the name bound by capture group i + 1
};

class Matcher {
 public:
  explicit Matcher(absl::string_view text)
      : lines_(absl::StrSplit(text, '\n')) {}

  absl::Status Run(const std::vector<Directive>& script) {
    std::vector<const Directive*> pending_not;
    Position cursor;
    size_t last_line = 0;
    for (const Directive& d : script) {
      if (d.kind == Kind::kNot) {
        pending_not.push_back(&d);
        continue;
      }
      auto compiled = Compile(d.pattern, /*bind=*/true);
      if (!compiled.ok())
        return compiled.status();
      std::optional<Found> found;
      if (d.kind == Kind::kNext) {
        if (last_line + 1 < lines_.size())
          found = Search(compiled->regex, {last_line + 1, 0},
                         {last_line + 1, lines_[last_line + 1].size()});
        if (!found) {
          return absl::NotFoundError(absl::StrCat(Describe(d),
                                                  " does not match IR line ",
                                                  last_line + 2, Bindings()));
        }
      } else {
        found = Search(compiled->regex, cursor, End());
        if (!found) {
          return absl::NotFoundError(
              absl::StrCat(Describe(d), " not found from IR line ",
                           cursor.line + 1, " on", Bindings()));
        }
      }
      for (const Directive* n : pending_not) {
        if (absl::Status s = CheckAbsent(*n, cursor, found->begin); !s.ok())
          return s;
      }
      pending_not.clear();
      for (size_t i = 0; i < compiled->binds.size(); ++i)
        bindings_[compiled->binds[i]] = found->groups[i + 1].str();
      cursor = found->end;
      last_line = found->end.line;
    }
    for (const Directive* n : pending_not) {
      if (absl::Status s = CheckAbsent(*n, cursor, End()); !s.ok())
        return s;
    }
    return absl::OkStatus();
  }

 private:
  Position End() const { return {lines_.size() - 1, lines_.back().size()}; }

  absl::StatusOr<Compiled> Compile(const std::string& pattern, bool bind) {
    Compiled out;
    std::string regex;
    std::map<std::string, size_t> group_of;  // names bound in this pattern
    size_t i = 0;
    while (i < pattern.size()) {
      // In `[[[I]]]` (an index list) the first bracket is text.
      const bool var =
          pattern.compare(i, 2, "[[") == 0 && pattern.compare(i, 3, "[[[") != 0;
      const bool re = pattern.compare(i, 2, "{{") == 0;
      if (!var && !re) {
        regex += Escape(absl::string_view(&pattern[i], 1));
        ++i;
        continue;
      }
      const size_t close = pattern.find(var ? "]]" : "}}", i + 2);
      if (close == std::string::npos)
        return absl::InvalidArgumentError("unterminated [[ or {{ in " +
                                          pattern);
      const std::string inner = pattern.substr(i + 2, close - i - 2);
      i = close + 2;
      if (re) {
        regex += "(?:" + inner + ")";
      } else if (auto it = bindings_.find(inner); it != bindings_.end()) {
        regex += absl::StrCat(Escape(it->second), kNoMoreDigits);
      } else if (!bind) {
        regex += absl::StrCat("(?:", kStmtName, ")");
      } else if (auto g = group_of.find(inner); g != group_of.end()) {
        regex += absl::StrCat("\\", g->second, kNoMoreDigits);
      } else {
        out.binds.push_back(inner);
        group_of[inner] = out.binds.size();
        regex += absl::StrCat("(", kStmtName, ")");
      }
    }
    try {
      out.regex = std::regex(regex);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad pattern ", pattern, ": ", e.what()));
    }
    return out;
  }

  // The first match in [from, to), which may span several lines; each
  // match lies within one line.
  std::optional<Found> Search(const std::regex& regex, Position from,
                              Position to) const {
    for (size_t line = from.line; line <= to.line && line < lines_.size();
         ++line) {
      const size_t begin = line == from.line ? from.column : 0;
      const size_t end = line == to.line ? to.column : lines_[line].size();
      if (begin > end)
        continue;
      Found found;
      const std::string& text = lines_[line];
      // ^ and $ keep meaning the ends of the line, not of the range.
      auto flags = std::regex_constants::match_default;
      if (begin > 0)
        flags |= std::regex_constants::match_prev_avail;
      if (end < text.size())
        flags |= std::regex_constants::match_not_eol;
      if (std::regex_search(text.begin() + begin, text.begin() + end,
                            found.groups, regex, flags)) {
        const size_t at = begin + found.groups.position(0);
        found.begin = {line, at};
        found.end = {line, at + found.groups.length(0)};
        return found;
      }
    }
    return std::nullopt;
  }

  absl::Status CheckAbsent(const Directive& d, Position from, Position to) {
    auto compiled = Compile(d.pattern, /*bind=*/false);
    if (!compiled.ok())
      return compiled.status();
    if (auto found = Search(compiled->regex, from, to)) {
      return absl::FailedPreconditionError(
          absl::StrCat(Describe(d), " found at IR line ", found->begin.line + 1,
                       " (searched IR lines ", from.line + 1, " to ",
                       to.line + 1, ")", Bindings()));
    }
    return absl::OkStatus();
  }

  std::string Bindings() const {
    std::string out;
    for (const auto& [name, value] : bindings_)
      absl::StrAppend(&out, out.empty() ? "; bound: " : ", ", name, "=", value);
    return out;
  }

  std::vector<std::string> lines_;
  std::map<std::string, std::string> bindings_;
};

std::string Numbered(absl::string_view text) {
  std::string out;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    char prefix[16];
    std::snprintf(prefix, sizeof(prefix), "%4d | ", ++number);
    absl::StrAppend(&out, prefix, line, "\n");
  }
  return out;
}

}  // namespace

::testing::AssertionResult CheckIr(absl::string_view text,
                                   absl::string_view script) {
  // For writing a script: the text each check sees.
  if (std::getenv("IR_CHECK_DUMP") != nullptr)
    std::printf("%s", Numbered(text).c_str());
  auto directives = Parse(script);
  absl::Status status = directives.status();
  if (status.ok())
    status = Matcher(text).Run(*directives);
  if (status.ok())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.message() << "\nIR:\n"
                                       << Numbered(text);
}

::testing::AssertionResult CheckKernel(const ir::Kernel& kernel,
                                       absl::string_view script) {
  return CheckIr(ir::PrintKernel(kernel), script);
}

}  // namespace quadrants::ir_check
