// tempra/core/aligned_vector.h: a std::vector whose storage starts on a cache line.
//
// malloc aligns large blocks to 16 bytes only, so a 64-byte vector load from a plain
// std::vector<float> crosses two cache lines every time; a kernel that streams the same small
// matrix once per audio sample (the LSTM) runs a fifth slower for it. AlignedVector<T> is
// std::vector<T> with an allocator that asks operator new for kBufferAlignment (64 bytes), as
// the buffer pool does for tensors.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#include "tempra/core/buffer_pool.h"

namespace tempra {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kBufferAlignment)));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t(kBufferAlignment)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace tempra
