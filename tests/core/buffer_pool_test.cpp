// Tests for tempra/core/buffer_pool.h: bucketing, LIFO reuse, the idle-bytes cap, statistics,
// thread safety, and the outstanding() count that proves arrays, views and ops leak nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/core/buffer_pool.h"
#include "tempra/ops/creation.h"

namespace {

using tempra::Array;
using tempra::BufferPool;
using tempra::DType;
using tempra::ExecContext;
using tempra::ExecOptions;

constexpr size_t kMiB = size_t{1} << 20;

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % tempra::kBufferAlignment == 0; }

TEST(CoreBufferPool, BucketSizeRounding) {
  // Powers of two from 64 bytes up to 1 MiB...
  EXPECT_EQ(BufferPool::bucket_size(0), 64u);
  EXPECT_EQ(BufferPool::bucket_size(1), 64u);
  EXPECT_EQ(BufferPool::bucket_size(64), 64u);
  EXPECT_EQ(BufferPool::bucket_size(65), 128u);
  EXPECT_EQ(BufferPool::bucket_size(128), 128u);
  EXPECT_EQ(BufferPool::bucket_size(129), 256u);
  EXPECT_EQ(BufferPool::bucket_size(1000), 1024u);
  EXPECT_EQ(BufferPool::bucket_size(kMiB / 2 + 1), kMiB);
  EXPECT_EQ(BufferPool::bucket_size(kMiB), kMiB);
  // ...then whole MiBs.
  EXPECT_EQ(BufferPool::bucket_size(kMiB + 1), 2 * kMiB);
  EXPECT_EQ(BufferPool::bucket_size(3 * kMiB - 1), 3 * kMiB);
  EXPECT_EQ(BufferPool::bucket_size(3 * kMiB), 3 * kMiB);
  EXPECT_EQ(BufferPool::bucket_size(3 * kMiB + 1), 4 * kMiB);
  EXPECT_EQ(BufferPool::bucket_size(100 * kMiB + 5), 101 * kMiB);
  // A bucket always holds the request and is never smaller than the last.
  size_t prev = 0;
  for (size_t n = 0; n < 3 * kMiB; n += 4099) {
    const size_t b = BufferPool::bucket_size(n);
    ASSERT_GE(b, n);
    ASSERT_GE(b, prev);
    prev = b;
  }
}

TEST(CoreBufferPool, AcquireReturnsAlignedWritableBuffersEvenForZeroBytes) {
  BufferPool pool;
  std::vector<std::pair<void*, size_t>> held;
  for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{100}, size_t{4097}, kMiB + 3}) {
    void* p = pool.acquire(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(aligned(p)) << n;
    std::memset(p, 0xab, BufferPool::bucket_size(n));  // the whole bucket is usable (ASan checks)
    held.emplace_back(p, n);
  }
  EXPECT_EQ(pool.outstanding(), 7);
  for (auto [p, n] : held) pool.release(p, n);
  EXPECT_EQ(pool.outstanding(), 0);
}

TEST(CoreBufferPool, ReleasedBuffersAreReusedLastInFirstOut) {
  BufferPool pool;
  void* a = pool.acquire(100);  // bucket 128
  void* b = pool.acquire(128);  // bucket 128
  ASSERT_NE(a, b);
  pool.release(a, 100);
  pool.release(b, 128);
  // A different bucket does not get them (both are still idle in the pool, so the system
  // allocator cannot hand out their addresses either).
  void* other = pool.acquire(300);
  EXPECT_NE(other, a);
  EXPECT_NE(other, b);
  // Same bucket: the most recently released first.
  EXPECT_EQ(pool.acquire(120), b);
  EXPECT_EQ(pool.acquire(65), a);
  const auto s = pool.stats();
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.misses, 3);
  EXPECT_EQ(s.outstanding, 3);
  EXPECT_EQ(s.cached_bytes, 0u);
  pool.release(a, 65);
  pool.release(b, 120);
  pool.release(other, 300);
}

TEST(CoreBufferPool, StatsCountHitsMissesAndCachedBytes) {
  BufferPool pool;
  EXPECT_EQ(pool.stats().hits, 0);
  EXPECT_EQ(pool.stats().misses, 0);
  void* p = pool.acquire(1000);  // miss, bucket 1024
  void* q = pool.acquire(10);    // miss, bucket 64
  EXPECT_EQ(pool.stats().misses, 2);
  EXPECT_EQ(pool.stats().outstanding, 2);
  pool.release(p, 1000);
  pool.release(q, 10);
  EXPECT_EQ(pool.stats().cached_bytes, 1024u + 64u);
  EXPECT_EQ(pool.stats().outstanding, 0);
  void* r = pool.acquire(900);  // hit, bucket 1024
  EXPECT_EQ(r, p);
  EXPECT_EQ(pool.stats().hits, 1);
  EXPECT_EQ(pool.stats().cached_bytes, 64u);
  void* s = pool.acquire(2000);  // miss: nothing idle in bucket 2048
  EXPECT_EQ(pool.stats().misses, 3);
  pool.release(r, 900);
  pool.release(s, 2000);
  pool.trim();
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
  void* t = pool.acquire(1000);  // trimmed: a miss again
  EXPECT_EQ(pool.stats().misses, 4);
  EXPECT_EQ(pool.stats().hits, 1);
  pool.release(t, 1000);
}

TEST(CoreBufferPool, CachedBytesNeverExceedMaxAndExcessBuffersAreFreed) {
  BufferPool pool(256);
  void* a = pool.acquire(128);
  void* b = pool.acquire(128);
  void* c = pool.acquire(128);
  pool.release(a, 128);
  EXPECT_EQ(pool.stats().cached_bytes, 128u);
  pool.release(b, 128);
  EXPECT_EQ(pool.stats().cached_bytes, 256u);
  pool.release(c, 128);  // would make 384 idle bytes: freed instead
  EXPECT_EQ(pool.stats().cached_bytes, 256u);
  EXPECT_EQ(pool.outstanding(), 0);
  // Only two come back from the pool; the third is a fresh allocation.
  void* x = pool.acquire(128);
  void* y = pool.acquire(128);
  EXPECT_EQ(x, b);
  EXPECT_EQ(y, a);
  EXPECT_EQ(pool.stats().hits, 2);
  const int64_t misses = pool.stats().misses;
  void* z = pool.acquire(128);
  EXPECT_EQ(pool.stats().misses, misses + 1);
  // A buffer bigger than the whole cap is never cached.
  void* big = pool.acquire(512);
  pool.release(big, 512);
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
  pool.release(x, 128);
  pool.release(y, 128);
  pool.release(z, 128);
  EXPECT_LE(pool.stats().cached_bytes, 256u);

  // A zero cap caches nothing: every acquire misses.
  BufferPool none(0);
  for (int i = 0; i < 5; ++i) none.release(none.acquire(64), 64);
  EXPECT_EQ(none.stats().cached_bytes, 0u);
  EXPECT_EQ(none.stats().hits, 0);
  EXPECT_EQ(none.stats().misses, 5);
}

TEST(CoreBufferPool, CapHoldsOverAMixedSequence) {
  constexpr size_t kCap = 8 * 1024;
  BufferPool pool(kCap);
  std::vector<std::pair<void*, size_t>> held;
  uint64_t state = 12345;
  for (int step = 0; step < 4000; ++step) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const size_t n = static_cast<size_t>(state >> 52);  // 0..4095 bytes
    if (held.size() < 16 && ((state >> 20) & 1)) {
      held.emplace_back(pool.acquire(n), n);
    } else if (!held.empty()) {
      const size_t k = static_cast<size_t>(state >> 33) % held.size();
      pool.release(held[k].first, held[k].second);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    }
    const auto s = pool.stats();
    ASSERT_LE(s.cached_bytes, kCap) << "step " << step;
    ASSERT_EQ(s.outstanding, static_cast<int64_t>(held.size())) << "step " << step;
  }
  for (auto [p, n] : held) pool.release(p, n);
  EXPECT_EQ(pool.outstanding(), 0);
  EXPECT_GT(pool.stats().hits, 0);
}

TEST(CoreBufferPool, ConcurrentAcquireReleaseFromManyThreads) {
  // A small cap so threads also race on the "free instead of cache" path.
  BufferPool pool(64 * 1024);
  constexpr int kThreads = 6, kIters = 3000;
  std::atomic<int64_t> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t state = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(t + 1);
      std::vector<std::pair<unsigned char*, size_t>> mine;
      for (int i = 0; i < kIters; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const size_t n = 1 + static_cast<size_t>(state >> 53);  // 1..2048 bytes
        auto* p = static_cast<unsigned char*>(pool.acquire(n));
        std::memset(p, t + 1, n);  // if two threads ever held one buffer, one sees the other's mark
        mine.emplace_back(p, n);
        if (mine.size() > 4 || (state >> 40) % 3 == 0) {
          auto [q, m] = mine.front();
          for (size_t k = 0; k < m; ++k)
            if (q[k] != t + 1) {
              ++corrupted;
              break;
            }
          pool.release(q, m);
          mine.erase(mine.begin());
        }
      }
      for (auto [q, m] : mine) pool.release(q, m);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupted.load(), 0) << "a buffer was handed to two holders at once";
  const auto s = pool.stats();
  EXPECT_EQ(s.outstanding, 0);
  EXPECT_EQ(s.hits + s.misses, int64_t{kThreads} * kIters);
  EXPECT_LE(s.cached_bytes, 64u * 1024u);
}

TEST(CoreBufferPool, ArraysAndViewsReturnTheirBufferWhenTheLastOneDies) {
  ExecContext ctx(ExecOptions{.threads = 1});
  const auto& pool = ctx.pool();
  EXPECT_EQ(pool->outstanding(), 0);
  {
    const Array a = Array::empty(ctx, {16, 16}, DType::f32);
    EXPECT_EQ(pool->outstanding(), 1);
    Array v = a.transpose(0, 1).slice(0, 0, 8);
    const Array z = Array::zeros(ctx, {3}, DType::i64);
    EXPECT_EQ(pool->outstanding(), 2);
    {
      const Array keep = v;
      (void)keep;
    }
    EXPECT_EQ(pool->outstanding(), 2);
  }
  EXPECT_EQ(pool->outstanding(), 0);
  // The freed buffer is reused by the next array of the same size.
  const int64_t hits = pool->stats().hits;
  { const Array b = Array::empty(ctx, {16, 16}, DType::f32); }
  EXPECT_EQ(pool->stats().hits, hits + 1);
  EXPECT_EQ(pool->outstanding(), 0);
}

TEST(CoreBufferPool, ExecContextReportsNothingOutstandingAfterOps) {
  ExecContext ctx(ExecOptions{.threads = 2});
  {
    const Array a = tempra::full(ctx, {64, 33}, 1.5);
    const Array b = tempra::cast(ctx, a, DType::f16);
    const Array c = tempra::copy(ctx, b.transpose(0, 1));
    const Array d = tempra::contiguous(ctx, c.slice(1, 0, 64, 3));
    const Array e = tempra::normal(ctx, {100, 200});
    const Array f = tempra::cast(ctx, e, DType::bf16);
    EXPECT_EQ(ctx.pool()->outstanding(), 6) << "each live result holds exactly one buffer";
    const std::vector<float> v = tempra::to_vector<float>(ctx, d);  // its temporary is released
    EXPECT_EQ(v.size(), 33u * 22u);
    EXPECT_EQ(v[0], 1.5f);
    EXPECT_EQ(ctx.pool()->outstanding(), 6);
  }
  EXPECT_EQ(ctx.pool()->outstanding(), 0);
  // The pool outlives the context while an array still holds a buffer from it.
  Array survivor;
  std::shared_ptr<BufferPool> pool;
  {
    ExecContext inner(ExecOptions{.threads = 1});
    pool = inner.pool();
    survivor = tempra::full(inner, {8}, 2.0);
    EXPECT_EQ(pool->outstanding(), 1);
  }
  EXPECT_EQ(survivor.at({7}), 2.0);
  survivor = Array();
  EXPECT_EQ(pool->outstanding(), 0);
}

}  // namespace
