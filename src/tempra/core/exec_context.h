// tempra/core/exec_context.h: what every op is called with.
//
// An ExecContext owns the choices and resources an op needs: which backend's kernels run, the
// buffer pool outputs come from, the thread pool kernels split work on, and the RNG stream that
// random fills draw from. Ops take it as their first argument; there is no global state.
// Contexts are not shared between threads that run ops concurrently (give each its own).
#pragma once

#include <cstdint>
#include <memory>

#include "tempra/core/buffer_pool.h"
#include "tempra/core/rng.h"
#include "tempra/core/thread_pool.h"

namespace tempra {

// Which kernel set runs. `scalar` is the readable specification; `native` (SIMD, the default)
// must agree with it under the tolerances of tests/backend/native_*_parity_test.cpp. A build
// without a SIMD arm gives native the scalar kernels.
enum class Backend : uint8_t { scalar, native };

struct ExecOptions {
  int threads = 0;  // 0: ThreadPool::default_thread_count() (TEMPRA_THREADS or physical cores)
  Backend backend = Backend::native;
  uint64_t seed = 0x7e3a;
  size_t max_cached_bytes = size_t{1} << 30;
};

class ExecContext {
 public:
  explicit ExecContext(const ExecOptions& options = {});
  ExecContext(const ExecContext&) = delete;
  ExecContext& operator=(const ExecContext&) = delete;

  Backend backend() const { return backend_; }
  void set_backend(Backend b) { backend_ = b; }
  ThreadPool& threads() { return threads_; }
  const std::shared_ptr<BufferPool>& pool() const { return pool_; }
  RngState& rng() { return rng_; }

 private:
  Backend backend_;
  std::shared_ptr<BufferPool> pool_;
  ThreadPool threads_;
  RngState rng_;
};

}  // namespace tempra
