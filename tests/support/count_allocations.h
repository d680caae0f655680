// tests/support/count_allocations.h: counts every heap allocation of the binary that includes it.
//
// Replaces the global operator new (every form: a make_shared control block, a std::vector, a
// std::string of an error message all show) with one that counts into g_allocations, and
// operator delete to match. A replacement is program-wide: include this from exactly one source
// file of a test binary, and only in binaries that want the count (the decode and amp
// allocation tests).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace tempra::testing {
inline std::atomic<int64_t> g_allocations{0};

inline void* counted_allocation(std::size_t size, std::size_t align = alignof(std::max_align_t)) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t rounded = (size + align - 1) / align * align;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, rounded ? rounded : align)
                                              : std::malloc(size ? size : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace tempra::testing

void* operator new(std::size_t size) {
  return tempra::testing::counted_allocation(size);
}
void* operator new[](std::size_t size) {
  return tempra::testing::counted_allocation(size);
}
void* operator new(std::size_t size, std::align_val_t align) {
  return tempra::testing::counted_allocation(size, std::size_t(align));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return tempra::testing::counted_allocation(size, std::size_t(align));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return tempra::testing::counted_allocation(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
