// tempra/backend/native/prefetch.h: software prefetch for the weight streams of decode steps.
//
// Why: a decode step reads every weight once, front to back, so it runs at the speed memory
// delivers. On the Intel Xeon KVM guests of this project (family 6 model 167) the hardware
// prefetcher leaves that stream latency-bound: the Q8_0 dot read ~3.7 GB/s on one core and a
// 0.6B Q8_0 model decoded at 6.1 tok/s (1 thread) / 11.0 (2 threads); asking for the bytes
// 2 KiB ahead made it 15.8 / 27.6 (docs/BENCHMARK.md, session 8). 1 KiB and 4 KiB ahead were
// both slower than 2 KiB there. A prefetch is a hint: it never faults (past the end of a
// mapping included) and changes no result, so the kernels stay bit-identical to scalar.
#pragma once

#include <cstddef>

namespace tempra::native {

// How far ahead of the block being read the weights are requested.
inline constexpr size_t kWeightPrefetchBytes = 2048;

// Requests the kBytes at `block` + kWeightPrefetchBytes (one prefetch per 64-byte line; blocks
// read one after another cover every line of the stream).
template <size_t kBytes>
inline void prefetch_ahead(const void* block) {
  const char* p = static_cast<const char*>(block) + kWeightPrefetchBytes;
  for (size_t offset = 0; offset < kBytes; offset += 64) __builtin_prefetch(p + offset, 0, 3);
}

}  // namespace tempra::native
