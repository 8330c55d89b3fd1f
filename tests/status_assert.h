// A Status or Result as a gtest assertion: EXPECT_TRUE(ok(s)) prints the error's message
// and word when it fails.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/result.h"

namespace pktpath {

template <class T>
::testing::AssertionResult ok(const Result<T>& r) {
  if (r) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.error().msg << (r.error().word.empty() ? "" : " (at \"" + r.error().word + "\")");
}

// The message of a call expected to fail; a test failure (and "") when it succeeded.
template <class T>
std::string failure_of(const Result<T>& r) {
  if (r) {
    ADD_FAILURE() << "expected an error, the call succeeded";
    return {};
  }
  return r.error().msg;
}

}  // namespace pktpath
