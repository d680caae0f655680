// tempra/backend/native/prefetch.h: software prefetch for the weight streams of decode steps.
//
// Why: a decode step reads every weight once, front to back, so it runs at the speed memory
// delivers. On the Intel Xeon KVM guests of this project (family 6 model 167) the hardware
// prefetcher leaves that stream latency-bound: the Q8_0 dot read ~3.7 GB/s on one core and a
// 0.6B Q8_0 model decoded at 6.1 tok/s (1 thread) / 11.0 (2 threads); asking for the bytes
// 2 KiB ahead made it 15.8 / 27.6 (docs/BENCHMARK.md, session 8). 1 KiB and 4 KiB ahead were
// both slower than 2 KiB there.
// Where to: a dot that reads one row asks for the L1 (prefetcht0); the GEMVs that read 8 or 16
// rows side by side ask for the L2 (prefetcht1, prefetch_weights). On an AMD EPYC Zen 4 the
// prefetcht0s of sixteen streams held the Q8_0 GEMV to a third of the core's bandwidth
// (151936 x 1024, one thread: 11.7 GB/s, and 28-30 with prefetcht1), while the one-row Q8_0
// dot ran 16.9 GB/s with prefetcht0 and 12.8 with prefetcht1 (bench/quant_dot_bench,
// docs/BENCHMARK.md, session 23). A prefetch is a hint: it never faults (past the end of a
// mapping included) and changes no result, so the kernels stay bit-identical to scalar.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tempra::native {

// How far ahead of the block being read the weights are requested.
inline constexpr size_t kWeightPrefetchBytes = 2048;

// Requests the 64-byte line at p into the L2 (locality 2: prefetcht1 on x86): for kernels that
// stream many rows at once.
inline void prefetch_weights(const void* p) { __builtin_prefetch(p, 0, 2); }

// Requests the kBytes at `block` + kWeightPrefetchBytes (one prefetch per 64-byte line; blocks
// read one after another cover every line of the stream).
template <size_t kBytes>
inline void prefetch_ahead(const void* block) {
  const char* p = static_cast<const char*>(block) + kWeightPrefetchBytes;
  for (size_t offset = 0; offset < kBytes; offset += 64) __builtin_prefetch(p + offset, 0, 3);
}

// Packing loops that read sixteen weight rows side by side (the x86 integer GEMMs' groups, the
// bf16 products' panels) are sixteen streams the hardware prefetcher does not follow: each row
// is requested this far ahead of the bytes being packed. On an AMD EPYC Zen 5, 256 bytes made
// 32-row prompts of Qwen3-0.6B Q4_0 5-10% and of BF16 1.3-1.6x faster (tempra bench; 512 bytes
// was no better for BF16; docs/BENCHMARK.md, session 27).
inline constexpr size_t kPackPrefetchBytes = 256;

// Requests the line kPackPrefetchBytes past p into the L1. The address is formed as an integer:
// it may lie past the end of the weights.
inline void prefetch_for_packing(const void* p) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + kPackPrefetchBytes), 0, 3);
}

// How far ahead a decode step that reads one weight row after another, as one stream, requests
// it (native/gemm.cpp's skinny dots at m = 1 on AVX-512, 4-32 KiB measured alike there; the
// streamed integer GEMVs: quant_gemm_avx512.cpp's, and the K-quants' k_gemv_rows on both x86
// arms).
inline constexpr size_t kRowStreamPrefetchBytes = 8192;

}  // namespace tempra::native
