// Patterns whose text cannot mean what it suggests (an unclosed bracket, a stray ']', a reversed
// range, an unknown class) are refused with their position, by the parser, check-config and a
// start, rather than accepted as rules that govern nothing.
#include <gtest/gtest.h>

#include "policies/Loader.h"
#include "policies/Pattern.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::policies {
namespace {

using testing::Fixture;
using testing::runCommand;

TEST(PatternSyntax, MalformedBracketsAreRefusedWithTheirPosition) {
  struct Case {
    const char* pattern;
    const char* says;
  };
  const Case cases[] = {
      {"system.slice/[docker-*.scope", "unclosed '[' at position 14"},
      {"a/b[!", "unclosed '[' at position 4"},
      {"a/[]", "unclosed '[' at position 3"},
      {"docker-*].scope", "']' at position 9 closes no '['"},
      {"pod[z-a]*", "the range \"z-a\" at position 5 is empty"},
      {"x[[:alfa:]]*", "unknown character class \"[:alfa:]\" at position 3"},
      {"x[[:alpha:]*", "unclosed '[' at position 2"},
      {"x[[:alpha*", "unclosed \"[:\" at position 3"},
      {"[]--]", "the range \"]--\" at position 2 is empty"},
      {"x[[.ab.]]y", "\"[.ab.]\" at position 3 names no single character"},
      {"x[[=hyphen=]]", "\"[=hyphen=]\" at position 3 names no single character"},
  };
  for (const Case& c : cases) {
    auto p = Pattern::parse(c.pattern);
    ASSERT_FALSE(p.ok()) << c.pattern << " was accepted";
    EXPECT_NE(p.error().message().find(c.says), std::string::npos) << c.pattern << ": " << p.error().message();
  }
}

TEST(PatternSyntax, WellFormedBracketsStillMatch) {
  struct Case {
    const char* pattern;
    const char* name;
    bool matches;
  };
  const Case cases[] = {
      {"[]]x", "]x", true},          {"[!]]x", "ax", true},       {"[[]docker*", "[docker-1", true},
      {"pod[a-c]", "podb", true},    {"pod[a-c]", "podd", false}, {"x[[:digit:]]*", "x1y", true},
      {"[*]", "*", true},            {"a-[0-9-]", "a--", true},   {"user-100?.slice", "user-1000.slice", true},
      {"lit]eral", "lit]eral", true},
  };
  for (const Case& c : cases) {
    auto p = Pattern::parse(c.pattern);
    ASSERT_TRUE(p.ok()) << c.pattern << ": " << p.error().message();
    EXPECT_EQ(p->matches(c.name), c.matches) << c.pattern << " against " << c.name;
  }
}

TEST(PatternSyntax, CheckConfigAndAStartRefuseTheRule) {
  Fixture fx;
  fx.write("p.yaml", "rules:\n  - match: system.slice/[docker-*.scope\n    mode: disabled\n");
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml")});
  EXPECT_EQ(code, 78) << out;
  EXPECT_NE(out.find("unclosed '[' at position 14"), std::string::npos) << out;
  fx.mkdir("cg");
  auto [runCode, runOut] = runCommand({RECLAIMD_BINARY, "run", "--config", fx.path("p.yaml"), "--cgroup-root",
                                       fx.path("cg"), "--status-socket", ""});
  EXPECT_EQ(runCode, 78) << runOut;
  EXPECT_NE(runOut.find("unclosed '['"), std::string::npos) << runOut;
}

}  // namespace
}  // namespace reclaimd::policies
