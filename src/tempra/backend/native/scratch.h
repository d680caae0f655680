// tempra/backend/native/scratch.h: per-thread packing buffers for the native kernels.
//
// GEMM packs panels of its operands into contiguous, aligned buffers. Those buffers belong to
// the thread that packs them and outlive the call: each grows to the largest size asked of it
// and is then reused, so a steady-state kernel call allocates nothing (decode calls the same
// shapes thousands of times). Memory held: a few MiB per thread for the f32 GEMM (see gemm.cpp's
// blocking constants); the integer GEMMs' activation tables grow with m x k (1 to 2.25 bytes per
// activation) and are kept as long; all of it is released when the thread exits.
// docs/MEMORY-MODEL.md lists it.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace tempra::native {

class ScratchBuffer {
 public:
  // A 64-byte-aligned buffer of at least `count` floats; contents are unspecified.
  float* floats(size_t count) {
    if (count > capacity_) {
      const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, bytes);
      if (!p) throw std::bad_alloc();
      data_.reset(static_cast<float*>(p));
      capacity_ = bytes / sizeof(float);
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  size_t capacity_ = 0;
};

// The calling thread's buffer number `slot` (distinct slots never alias). gemm.cpp uses 0 to 3;
// slot 4 holds gemm_bf16_products' rounded activations while it calls into them.
inline ScratchBuffer& thread_scratch(int slot) {
  thread_local ScratchBuffer buffers[5];
  return buffers[slot];
}

}  // namespace tempra::native
