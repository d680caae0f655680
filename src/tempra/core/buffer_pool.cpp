// tempra/core/buffer_pool.cpp
#include "tempra/core/buffer_pool.h"

#include <bit>
#include <new>

namespace tempra {
namespace {
constexpr size_t kSmallest = 64;
constexpr size_t kMiB = size_t{1} << 20;

void* system_allocate(size_t bytes) { return ::operator new(bytes, std::align_val_t{kBufferAlignment}); }
void system_free(void* p) { ::operator delete(p, std::align_val_t{kBufferAlignment}); }
}  // namespace

BufferPool::BufferPool(size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}

BufferPool::~BufferPool() { trim(); }

size_t BufferPool::bucket_size(size_t bytes) {
  if (bytes <= kSmallest) return kSmallest;
  if (bytes <= kMiB) return std::bit_ceil(bytes);
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

void* BufferPool::acquire(size_t bytes) {
  const size_t bucket = bucket_size(bytes);
  {
    std::lock_guard lock(mutex_);
    ++stats_.outstanding;
    auto it = idle_.find(bucket);
    if (it != idle_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= bucket;
      ++stats_.hits;
      return p;
    }
    ++stats_.misses;
  }
  try {
    return system_allocate(bucket);
  } catch (...) {
    std::lock_guard lock(mutex_);
    --stats_.outstanding;
    throw;
  }
}

void BufferPool::release(void* buffer, size_t bytes) {
  const size_t bucket = bucket_size(bytes);
  {
    std::lock_guard lock(mutex_);
    --stats_.outstanding;
    if (stats_.cached_bytes + bucket <= max_cached_bytes_) {
      idle_[bucket].push_back(buffer);
      stats_.cached_bytes += bucket;
      return;
    }
  }
  system_free(buffer);
}

void BufferPool::trim() {
  std::lock_guard lock(mutex_);
  for (auto& [bucket, stack] : idle_)
    for (void* p : stack) system_free(p);
  idle_.clear();
  stats_.cached_bytes = 0;
}

int64_t BufferPool::outstanding() const {
  std::lock_guard lock(mutex_);
  return stats_.outstanding;
}

BufferPoolStats BufferPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace tempra
