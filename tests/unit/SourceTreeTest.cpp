// The tests' reader of the project's own files: what it cannot read fails the test that asked,
// instead of reading as empty text that a test looking for what a file must say passes on.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "tests/unit/Fixture.h"
#include "tests/unit/SourceTree.h"

namespace reclaimd::testing {
namespace {

TEST(SourceTree, AFileThatCannotBeReadIsAnErrorNotEmptyText) {
  Fixture f;
  EXPECT_THROW(readSource(f.path("README.md")), std::runtime_error);
  f.mkdir("docs");
  EXPECT_THROW(readSource(f.path("docs")), std::runtime_error);
  f.write("empty", "");
  EXPECT_EQ(readSource(f.path("empty")), "");
  f.write("text", std::string_view("a\n\0b", 4));
  EXPECT_EQ(readSource(f.path("text")), std::string("a\n\0b", 4));
}

TEST(SourceTree, WhatIsWrittenIsReadBack) {
  Fixture f;
  writeSource(f.path("page.md"), "one\ntwo\n");
  EXPECT_EQ(readSource(f.path("page.md")), "one\ntwo\n");
  EXPECT_THROW(writeSource(f.path("no-such-directory/page.md"), "x"), std::runtime_error);
}

}  // namespace
}  // namespace reclaimd::testing
