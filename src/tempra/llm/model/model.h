// tempra/llm/model/model.h: the interface every architecture implements, and that the session,
// the generator, the batched engine and the scheduler are written against.
//
// Contract:
// - A Model is loaded once and is then immutable: any number of sequences, each with its own
//   KvCache, run through it (concurrently from one thread's batches; forward() is const).
// - forward() runs one batch: rows from several sequences at once. Each SequenceRows appends its
//   tokens to its own cache at positions cache->size(), cache->size() + 1, ...; every weight
//   matrix is read once for all the rows of the batch, attention runs per sequence over that
//   sequence's cache alone, and each cache is advanced by its rows at the end. A decode step of
//   8 streams is one forward of 8 rows, not 8 forwards.
// - Logits: each sequence asks for the logits of its last `logit_rows` tokens (0 for a prefill
//   chunk that is not the prompt's last, 1 for a decode step or a prompt's end, more to verify
//   a speculative draft). They land in ForwardBuffers::logits, f32 [sum of logit_rows, n_vocab],
//   sequence after sequence in batch order.
// - Validation happens before anything is written: an empty batch or sequence, a cache named
//   twice, a token outside the vocab, a cache of another shape, rows past a cache's capacity or
//   past the buffers' sizes throw tempra::Error naming the sequence and the counts, and no cache
//   changes. forward() allocates nothing: every intermediate lives in the buffers made once by
//   make_buffers().
// - Batching changes no result beyond what the kernels allow: attention, norms, rope and the
//   quantized dots are per row, so a sequence's logits in a batch equal its logits alone when
//   every matrix product takes the same path for both row counts (the GEMM's skinny path up to
//   32 rows, tempra/backend/native/gemm.cpp); tests/llm/batch_forward_test.cpp measures it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/experts.h"
#include "tempra/llm/model/kv_cache.h"

namespace tempra::llm {

// What the runtime needs to know of a model, whatever its architecture.
struct ModelInfo {
  std::string architecture;     // general.architecture: "qwen3", ...
  int64_t n_vocab = 0;          // rows of the output head: logits per position
  int64_t n_embd = 0;           // the width of the residual stream
  int64_t n_head = 0;           // query heads
  int64_t context_length = 0;   // the context the model was trained for
  KvCacheShape cache = {};      // the KV cache of one sequence; capacity 0 (the session's choice)
};

// One sequence's rows in a batch: `tokens` appended to `cache`, logits for the last logit_rows.
struct SequenceRows {
  KvCache* cache = nullptr;
  std::span<const int32_t> tokens = {};
  int64_t logit_rows = 1;  // 0 ... tokens.size()
};

// The scratch of one forward pass, sized at construction for at most `tokens` rows in all, at
// most `logit_rows` rows of logits in all, and sequences of at most `kv_capacity` positions. The
// architecture derives from it and keeps its intermediates there.
class ForwardBuffers {
 public:
  ForwardBuffers(int64_t tokens, int64_t logit_rows, int64_t kv_capacity)
      : tokens(tokens), logit_rows(logit_rows), kv_capacity(kv_capacity) {}
  virtual ~ForwardBuffers() = default;
  ForwardBuffers(const ForwardBuffers&) = delete;
  ForwardBuffers& operator=(const ForwardBuffers&) = delete;

  const int64_t tokens, logit_rows, kv_capacity;
  // f32 [max(logit_rows, 1), n_vocab]; a forward pass writes its first (sum of logit_rows) rows.
  Array logits;
  // The logits of row `i` of the last forward pass (n_vocab floats, valid until the next one).
  std::span<const float> logits_row(int64_t i) const {
    return {logits.data<float>() + i * logits.dim(1), size_t(logits.dim(1))};
  }
};

class ExpertCache;

// How load_model loads a model: everything mapped (the default), or a mixture of experts with
// its routed experts streamed from the file (experts.h, expert_cache.h).
struct LoadOptions {
  std::optional<ExpertStreaming> moe_stream;
  // How to open the file for these options: one tensor at a time when streaming.
  io::TensorMapping tensor_mapping() const {
    return moe_stream ? io::TensorMapping::per_tensor : io::TensorMapping::whole_file;
  }
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelInfo& info() const = 0;
  virtual std::unique_ptr<ForwardBuffers> make_buffers(ExecContext& ctx, int64_t tokens, int64_t logit_rows,
                                                       int64_t kv_capacity) const = 0;
  // Runs the batch (see the contract above) into `buffers`, which this model made.
  virtual void forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const = 0;

  // One sequence, every row's logits, into fresh buffers: f32 [n, n_vocab]. For tests and tools.
  Array forward(ExecContext& ctx, std::span<const int32_t> tokens, KvCache& cache) const;
  // A cache of this model's shape holding up to `capacity` positions (0: the model's context).
  // max_rows > 0: the most rows one forward pass will write to it (a session's batch), which
  // lets sliding-window layers keep only their window's rows (KvCacheShape::window_rows; at
  // least kMinWindowRows, so a speculative draft's verification fits too).
  KvCache make_cache(ExecContext& ctx, int64_t capacity, KvCacheType type, int64_t max_rows = 0) const;
  static constexpr int64_t kMinWindowRows = 64;
  // The cache of a model loaded with LoadOptions::moe_stream, else null.
  virtual const ExpertCache* expert_cache() const { return nullptr; }
};

// Opens a GGUF and loads the architecture its general.architecture names; a name no
// architecture claims is an error listing the supported ones, and so is moe_stream for a model
// without routed experts. The path overload maps tensors one at a time when streaming
// (io::TensorMapping::per_tensor), so the experts never enter the address space.
std::unique_ptr<Model> load_model(const io::GgufModel& gguf, const LoadOptions& options = {});
std::unique_ptr<Model> load_model(const std::filesystem::path& path, const LoadOptions& options = {});

// Checks what every forward() must check before it writes: see the contract. `op` names the
// architecture in the messages.
void check_batch(std::string_view op, const ModelInfo& info, std::span<const SequenceRows> batch,
                 const ForwardBuffers& buffers);

}  // namespace tempra::llm
