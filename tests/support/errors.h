// tests/support/errors.h: asserting that a call fails with a tempra::Error.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tempra/core/error.h"

namespace tempra::testing {

// Runs fn, expects tempra::Error, and returns its message ("" and a test failure otherwise).
template <class Fn>
std::string error_message(Fn&& fn) {
  try {
    fn();
  } catch (const tempra::Error& e) {
    return e.what();
  } catch (...) {
    ADD_FAILURE() << "threw something other than tempra::Error";
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

}  // namespace tempra::testing
