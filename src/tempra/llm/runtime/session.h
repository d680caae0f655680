// tempra/llm/runtime/session.h: one sequence over a model: its KV cache and the buffers of a
// decode step, whatever the architecture.
//
// Contract: Session::forward appends tokens to its KvCache and returns the logits of each
// appended position, f32 [n, n_vocab]; prompts are processed in batches of at most `batch`
// tokens, a decode step is a forward of one token. prefill() keeps only the last position's
// logits. truncate(n) rewinds the session to its first n tokens (KvCache::truncate: what is
// re-appended is read exactly as a fresh cache would read it); a recurrent model's session
// rewinds only to 0 or not at all (KvCache::can_truncate), so verify() serves it only where
// every row is kept.
//
// Allocation: the session owns buffers for one token, made at construction, so decode()
// allocates nothing at all (tests/llm/qwen3_decode_alloc_test.cpp counts operator new calls)
// with any cache type. A prompt takes its buffers from the ExecContext's pool.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "tempra/core/array.h"
#include "tempra/llm/model/kv_cache.h"
#include "tempra/llm/model/model.h"

namespace tempra::llm {

struct SessionOptions {
  int64_t context = 0;  // KV cache capacity in tokens; 0: the model's context_length
  KvCacheType cache_type = KvCacheType::f16;  // llama.cpp's default; f32 for exact parity tests
  int64_t batch = 512;  // the most prompt tokens one forward pass processes
};

class Session {
 public:
  // The model must outlive the session.
  Session(ExecContext& ctx, const Model& model, const SessionOptions& options = {});

  // Appends the tokens (in batches) and returns the logits of every one of them, f32 [n, n_vocab].
  Array forward(ExecContext& ctx, std::span<const int32_t> token_ids);
  // Appends the tokens (in batches) and returns the logits of the last one only, n_vocab
  // floats owned by the session, valid until its next call: prefill without [n, n_vocab].
  std::span<const float> prefill(ExecContext& ctx, std::span<const int32_t> token_ids);
  // One decode step: appends `token` and returns its logits (n_vocab floats owned by the
  // session, valid until its next call). Allocates nothing.
  std::span<const float> decode(ExecContext& ctx, int32_t token);
  // A speculative verify pass: appends `tokens` (1 ... 32: the kernels a decode step takes, so
  // each row's logits are bit for bit those of decoding the tokens one by one) and returns the
  // buffers whose logits_row(i) follows tokens[i], valid until the next call. Its buffers are
  // allocated at the first call.
  const ForwardBuffers& verify(ExecContext& ctx, std::span<const int32_t> tokens);
  void truncate(int64_t n) { cache_.truncate(n); }
  int64_t size() const { return cache_.size(); }
  const KvCache& cache() const { return cache_; }
  const Model& model() const { return *model_; }

 private:
  const Model* model_;
  int64_t batch_;
  KvCache cache_;
  std::unique_ptr<ForwardBuffers> step_;  // one token's buffers, reused by every decode step
  std::unique_ptr<ForwardBuffers> verify_;  // 32 rows with logits, for verify()
};

}  // namespace tempra::llm
