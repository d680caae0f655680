// tempra/core/timing.h: wall time in milliseconds, as every timing line and metric reports it.
#pragma once

#include <chrono>

namespace tempra {

// Milliseconds from `start` to now on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tempra
