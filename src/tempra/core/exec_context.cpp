// tempra/core/exec_context.cpp
#include "tempra/core/exec_context.h"

namespace tempra {

ExecContext::ExecContext(const ExecOptions& options)
    : backend_(options.backend),
      pool_(std::make_shared<BufferPool>(options.max_cached_bytes)),
      threads_(options.threads > 0 ? options.threads : ThreadPool::default_thread_count()),
      rng_{options.seed, 0} {}

}  // namespace tempra
