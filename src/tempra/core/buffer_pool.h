// tempra/core/buffer_pool.h: where op outputs get their memory.
//
// Contract: acquire(n) returns a 64-byte-aligned buffer of at least n bytes; release() gives it
// back. Sizes are rounded up to a bucket (powers of two up to 1 MiB, then multiples of 1 MiB) so
// that the next op of the same shape finds the buffer it just freed: each bucket is a LIFO stack,
// and the most recently released buffer is the one still hot in cache. At most max_cached_bytes
// sit idle in the pool; beyond that a released buffer is freed. Thread-safe.
//
// outstanding() counts buffers acquired and not released: tests check it is 0 at teardown,
// which proves no view or op leaked a reference. Why a pool and not an arena:
// docs/MEMORY-MODEL.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace tempra {

inline constexpr size_t kBufferAlignment = 64;

struct BufferPoolStats {
  int64_t outstanding = 0;   // acquired, not yet released
  size_t cached_bytes = 0;   // idle in the pool
  int64_t hits = 0;          // acquires served from the pool
  int64_t misses = 0;        // acquires that went to the system allocator
};

class BufferPool {
 public:
  explicit BufferPool(size_t max_cached_bytes = size_t{1} << 30);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` bytes (never null, even for 0); its capacity is bucket_size(bytes).
  void* acquire(size_t bytes);
  // Gives back a buffer from acquire(bytes) with the same `bytes`.
  void release(void* buffer, size_t bytes);
  // Frees every idle buffer.
  void trim();

  int64_t outstanding() const;
  BufferPoolStats stats() const;
  static size_t bucket_size(size_t bytes);

 private:
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> idle_;  // bucket size -> LIFO stack
  size_t max_cached_bytes_;
  BufferPoolStats stats_;
};

}  // namespace tempra
