// tempra/llm/model/kv_cache.h: the per-session key/value cache of a decoder-only transformer.
//
// Contract: one KvCache holds, for every layer, the keys and values of the first size() token
// positions of a sequence, in preallocated [n_head_kv, capacity, head_dim] buffers (one
// allocation per layer and per K/V, at construction; appending never allocates cache memory).
// A forward pass writes the new positions with write() (which may overwrite anything at or
// past size()), reads the prefix it attends over with keys()/values(), and commits with
// advance(). truncate(n) forgets every position from n on (rewind for speculative decoding or
// an edited prompt); since positions past size() are always rewritten before they are read,
// truncate + re-append reads exactly what a fresh cache would, bit for bit.
//
// Storage type: f32 (exact), f16 (llama.cpp's default, half the memory) or q8_0 (ggml's Q8_0
// blocks along head_dim, which must be a multiple of 32; about a quarter of f32's memory).
// write() rounds to the storage type (Q8_0 with the reference encoder, byte-identical to
// ggml's) and keys()/values() widen back to f32.
//
// The forward pass uses the raw entries instead: write_rows() stores token-major f32 rows
// without allocating, and attend() runs causal attention over the cache in place through the
// kernel table's cache_attention (rows are read where they lie, f16 and Q8_0 widened in
// registers), so a decode step neither copies nor widens the prefix, whatever the storage type.
//
// A sliding-window layer of a cache made with KvCacheShape::window_rows (Gemma 3's local layers)
// keeps its last R = window + window_rows + 63 positions: position p at row p % R, and again at
// row p % R + R, so that the positions any forward pass attends over (at most window - 1 before
// its first row, rounded down to a multiple of kCacheKeyAlignment (64), and its at most
// window_rows own) lie in consecutive rows, which attend() hands the kernel as they are. Such a
// layer takes at most window_rows rows per write, cannot give back the full prefix (keys(),
// values() and write() refuse it), and truncates only where every position the next rows will
// see is still held (can_truncate). Any layer with a window hands the kernel its rows from that
// aligned start, where native's key blocks fall as they would over the whole cache, so a ring
// and a full layer give the same bits (tests/llm/gemma3_oracle_test.cpp).
//
// Recurrent layers (qwen35's gated delta nets) keep no rows: each holds one f32 state that
// summarizes every position so far, which a forward pass reads and replaces in place
// (recurrent_state()). Such a state cannot forget its last positions, so a cache with recurrent
// layers truncates only to 0 (the states zeroed) or to its own size (can_truncate()); llama.cpp's
// recurrent memory refuses a partial removal alike (llama_memory_recurrent::seq_rm).
#pragma once

#include <cstdint>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/quant/blocks.h"

namespace tempra::llm {

enum class KvCacheType : uint8_t { f32, f16, q8_0 };

struct KvCacheShape {
  int n_layer = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t capacity = 0;  // the most token positions the cache can hold
  // Multi-head latent attention (deepseek2): each position's value is its key row itself, of
  // which the model reads the leading dims it needs, so no value is stored (llama.cpp's MLA
  // cache holds the compressed rows once; it views V inside K). Writes ignore v.
  bool values_in_keys = false;
  // Recurrent layers (0: none): how many, and the f32 floats of one layer's state. n_layer then
  // counts the attention layers only (it may be 0).
  int n_recurrent = 0;
  int64_t recurrent_floats = 0;
  // Sliding-window layers (Gemma 3's local ones): the window each attention layer attends over
  // (0: every position; empty: no layer slides). With window_rows > 0, the most rows one forward
  // pass writes to the cache, a sliding layer keeps only its last window + window_rows - 1
  // positions, in a ring, when that is fewer than capacity (llama.cpp's SWA cache): its memory
  // no longer grows with the context. 0: every layer keeps capacity positions.
  std::vector<int64_t> layer_window;
  int64_t window_rows = 0;

  // Whether a cache of this shape serves a model of `other`'s (capacity and window_rows aside).
  bool same_layers(const KvCacheShape& other) const {
    return n_layer == other.n_layer && n_head_kv == other.n_head_kv && head_dim == other.head_dim &&
           values_in_keys == other.values_in_keys && n_recurrent == other.n_recurrent &&
           recurrent_floats == other.recurrent_floats && layer_window == other.layer_window;
  }
  // The window of attention layer `layer` (0: none).
  int64_t window(int layer) const { return layer_window.empty() ? 0 : layer_window[size_t(layer)]; }
};

class KvCache {
 public:
  KvCache(ExecContext& ctx, const KvCacheShape& shape, KvCacheType type = KvCacheType::f32);

  const KvCacheShape& shape() const { return shape_; }
  KvCacheType type() const { return type_; }
  int64_t size() const { return size_; }
  int64_t capacity() const { return shape_.capacity; }

  // Stores k and v (v's values unread when values_in_keys; its shape still checked), each
  // [n_head_kv, n, head_dim] (any float dtype, any strides), at positions
  // [start, start + n) of `layer`. start must not exceed size() and start + n not capacity().
  void write(ExecContext& ctx, int layer, int64_t start, const Array& k, const Array& v);
  // The first `length` positions of `layer` as f32 [1, n_head_kv, length, head_dim], the layout
  // tempra::attention takes.
  Array keys(ExecContext& ctx, int layer, int64_t length) const;
  Array values(ExecContext& ctx, int layer, int64_t length) const;

  // Allocation-free entries for a forward pass over raw buffers. Bounds are checked; pointers
  // must hold what is said.
  // k and v: contiguous f32 [n, n_head_kv, head_dim] (token-major, as a projection writes
  // them), stored at positions [start, start + n) of `layer` (v unread, and may be null, when
  // values_in_keys).
  void write_rows(ExecContext& ctx, int layer, int64_t start, int64_t n, const float* k, const float* v);
  // Causal attention of q_len queries, q token-major f32 [q_len, q_heads, head_dim], placed at
  // positions kv_len - q_len ... kv_len - 1, over positions [0, kv_len) of `layer`; writes out
  // (same layout as q). scores: q_heads * q_len * kv_len floats of scratch. window > 0: sliding
  // attention, the query at position p sees keys j with p - j < window (Gemma's local layers).
  void attend(ExecContext& ctx, int layer, int64_t kv_len, const float* q, int64_t q_len, int64_t q_heads, double scale,
              float* scores, float* out, int64_t window = 0) const;

  // attend() as ggml's CPU flash attention computes it over an f16 cache (llama.cpp's default
  // on CPU; ops.cpp, ggml_compute_forward_flash_attn_ext_f16_one_chunk): each query row rounded
  // to f16, scores as f16 x f16 dots, an online softmax whose value accumulator is f16 (rounded
  // after every rescale and multiply-add), divided by the softmax sum at the end. For logit
  // parity with llama.cpp (Numerics::ggml); f16 caches only.
  void attend_ggml(ExecContext& ctx, int layer, int64_t kv_len, const float* q, int64_t q_len, int64_t q_heads,
                   double scale, float* out, int64_t window = 0) const;

  // The state of recurrent layer `layer` (shape().recurrent_floats floats; zero in a fresh or
  // emptied cache), which the forward pass updates in place.
  float* recurrent_state(int layer);
  const float* recurrent_state(int layer) const;

  // Commits n positions written past size().
  void advance(int64_t n);
  // Whether truncate(n) can keep the first n positions: any n <= size(), or with recurrent
  // layers only 0 and size(), or with sliding layers in rings 0 and the n whose next rows see
  // only positions the rings still hold.
  bool can_truncate(int64_t n) const;
  // The positions layer `layer` holds rows for: capacity(), or 2 R for a sliding layer's ring.
  int64_t layer_rows(int layer) const { return rows_[size_t(layer)]; }
  // Whether truncate can drop the newest positions (a speculative draft's rejected rows): not
  // with recurrent layers, whose states have taken them in (rings can drop up to window_rows).
  bool rewinds() const { return shape_.n_recurrent == 0; }
  // Keeps the first n positions; a cache with recurrent layers that cannot (can_truncate) throws
  // tempra::Error and is left as it was.
  void truncate(int64_t n);

 private:
  Array read(ExecContext& ctx, bool keys, int layer, int64_t length, const char* what) const;
  void write_q8_0(ExecContext& ctx, std::vector<quant::BlockQ8_0>& blocks, int64_t start, const Array& x);
  Array read_q8_0(ExecContext& ctx, const std::vector<quant::BlockQ8_0>& blocks, int64_t length) const;

  // Where the rows attention reads for queries ending at kv_len lie: the first position it
  // sees (the window's first for the first query, 0 without a window) and that position's row.
  struct Visible {
    int64_t first_position, first_row;
  };
  Visible visible(size_t at, int64_t kv_len, int64_t q_len) const;
  // visible() for `op`'s attention with `window`, checked against the layer's window and ring.
  Visible attended(size_t at, int64_t kv_len, int64_t q_len, int64_t window, const char* op) const;

  KvCacheShape shape_;
  KvCacheType type_;
  int64_t size_ = 0;
  // Per attention layer: the rows it holds (capacity, or 2 R), and R for a ring (0: none).
  std::vector<int64_t> rows_, ring_;
  std::vector<Array> keys_, values_;  // f32/f16: per layer [n_head_kv, capacity, head_dim]
  // q8_0: per layer, blocks in [n_head_kv, capacity, head_dim / 32] order.
  std::vector<std::vector<quant::BlockQ8_0>> key_blocks_, value_blocks_;
  std::vector<float> recurrent_;  // n_recurrent states of recurrent_floats, layer after layer
  // Where layer `at`'s values lie: their own buffers, or the keys' (values_in_keys).
  const Array& value_array(size_t at) const { return shape_.values_in_keys ? keys_[at] : values_[at]; }
  const std::vector<quant::BlockQ8_0>& value_blocks(size_t at) const {
    return shape_.values_in_keys ? key_blocks_[at] : value_blocks_[at];
  }
};

}  // namespace tempra::llm
