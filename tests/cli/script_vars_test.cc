#include "cli/script_vars.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace pktpath::cli {
namespace {

TEST(ScriptVars, ExpandsFromEnvironmentWithDefaults) {
  ::setenv("PP_TEST_DUR", "0.5", 1);
  ::unsetenv("PP_TEST_UNSET");
  std::string out;
  ScriptError e;
  ASSERT_TRUE(expand_vars("pktgen --duration ${PP_TEST_DUR:-2} -n ${PP_TEST_UNSET:-100}", out, e));
  EXPECT_EQ(out, "pktgen --duration 0.5 -n 100");
  ASSERT_TRUE(expand_vars("a ${PP_TEST_DUR}b", out, e));
  EXPECT_EQ(out, "a 0.5b");
  ASSERT_TRUE(expand_vars("no vars here", out, e));
  EXPECT_EQ(out, "no vars here");
  ASSERT_TRUE(expand_vars("x # comment with ${ unterminated", out, e));
  EXPECT_EQ(out, "x # comment with ${ unterminated");
  ::unsetenv("PP_TEST_DUR");
}

TEST(ScriptVars, Errors) {
  std::string out;
  ScriptError e;
  ::unsetenv("PP_TEST_UNSET");
  EXPECT_FALSE(expand_vars("x ${PP_TEST_UNSET}", out, e));
  EXPECT_EQ(e.word, "${PP_TEST_UNSET}");
  EXPECT_NE(e.msg.find("PP_TEST_UNSET is not set"), std::string::npos);
  EXPECT_FALSE(expand_vars("x ${oops", out, e));
  EXPECT_NE(e.msg.find("unterminated"), std::string::npos);
  EXPECT_FALSE(expand_vars("x ${a-b}", out, e));
  EXPECT_NE(e.msg.find("bad variable name"), std::string::npos);
}

}  // namespace
}  // namespace pktpath::cli
