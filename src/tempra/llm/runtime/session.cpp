// tempra/llm/runtime/session.cpp: see session.h.
#include "tempra/llm/runtime/session.h"

#include <algorithm>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/ops/ops.h"

namespace tempra::llm {

Session::Session(ExecContext& ctx, const Model& model, const SessionOptions& options)
    : model_(&model),
      batch_(options.batch),
      cache_(model.make_cache(ctx, options.context, options.cache_type, options.batch)),
      step_(model.make_buffers(ctx, 1, 1, cache_.capacity())) {
  check(batch_ > 0, "Session", "batch must be positive, got ", batch_);
}

Array Session::forward(ExecContext& ctx, std::span<const int32_t> token_ids) {
  const auto n = static_cast<int64_t>(token_ids.size());
  if (n == 1) {  // a decode step: the session's buffers, then a copy the caller may keep
    const std::span<const float> logits = decode(ctx, token_ids[0]);
    return Array::from_values<float>(ctx, {1, model_->info().n_vocab}, logits);
  }
  if (n <= batch_) return model_->forward(ctx, token_ids, cache_);
  std::vector<Array> parts;
  for (int64_t first = 0; first < n; first += batch_)
    parts.push_back(model_->forward(ctx, token_ids.subspan(first, std::min(batch_, n - first)), cache_));
  return concat(ctx, parts, 0);
}

std::span<const float> Session::prefill(ExecContext& ctx, std::span<const int32_t> token_ids) {
  const auto n = static_cast<int64_t>(token_ids.size());
  check(n > 0, "Session", "prefill needs at least one token");
  if (n == 1) return decode(ctx, token_ids[0]);
  check(cache_.size() + n <= cache_.capacity(), model_->info().architecture, "forward of ", n, " tokens after ",
        cache_.size(), " overflows the KV cache capacity ", cache_.capacity());
  // One set of batch-sized buffers for every batch; only the last batch computes logits.
  const auto buffers = model_->make_buffers(ctx, std::min(batch_, n), 1, cache_.size() + n);
  for (int64_t first = 0; first < n; first += batch_) {
    const int64_t count = std::min(batch_, n - first);
    const SequenceRows rows{&cache_, token_ids.subspan(size_t(first), size_t(count)), first + count == n ? 1 : 0};
    model_->forward(ctx, std::span<const SequenceRows>(&rows, 1), *buffers);
  }
  const std::span<const float> last = buffers->logits_row(0);
  std::copy(last.begin(), last.end(), step_->logits.data<float>());
  return step_->logits_row(0);
}

std::span<const float> Session::decode(ExecContext& ctx, int32_t token) {
  const SequenceRows rows{&cache_, std::span<const int32_t>(&token, 1), 1};
  model_->forward(ctx, std::span<const SequenceRows>(&rows, 1), *step_);
  return step_->logits_row(0);
}

const ForwardBuffers& Session::verify(ExecContext& ctx, std::span<const int32_t> tokens) {
  constexpr int64_t kRows = 32;
  const auto n = int64_t(tokens.size());
  check(n >= 1 && n <= kRows, "Session", "a verify pass takes 1 to ", kRows, " tokens, got ", n);
  if (!verify_) verify_ = model_->make_buffers(ctx, kRows, kRows, cache_.capacity());
  const SequenceRows rows{&cache_, tokens, n};
  model_->forward(ctx, std::span<const SequenceRows>(&rows, 1), *verify_);
  return *verify_;
}

}  // namespace tempra::llm
