// tests/support/llama_oracle.h: starting llama.cpp (the oracle) quietly, once per test process.
//
// For tests that link the `llama_oracle` target (tools/oracle/CMakeLists.txt), which defines
// TEMPRA_ORACLE_BINS. llama.cpp logs every tensor it loads; only errors are kept, so a failing
// assertion can say why llama.cpp refused something.
#pragma once

#include <mutex>
#include <string>

#include "llama.h"

namespace tempra::testing {

// The errors llama.cpp logged since the last clear().
inline std::string& last_llama_error() {
  static std::string errors;
  return errors;
}

// Loads the CPU backends from the oracle's folder and initializes llama.cpp, once.
inline void init_llama() {
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(
        [](ggml_log_level level, const char* text, void*) {
          if (level == GGML_LOG_LEVEL_ERROR) last_llama_error() += text;
        },
        nullptr);
    ggml_backend_load_all_from_path(TEMPRA_ORACLE_BINS);
    llama_backend_init();
  });
}

}  // namespace tempra::testing
