// tests/llm/logit_oracle.h: an architecture's forward pass against llama.cpp's (the oracle, libllama
// from tools/oracle/install.sh), logit for logit, on the same GGUF and the same tokens. Every
// family's oracle test (qwen3_oracle_test.cpp, llama_oracle_test.cpp, ...) is a list of compare()
// calls on synthesized models.
//
// compare(label, path, prompts, criteria): each prompt (an English paragraph tokenized by
// tempra's tokenizer, cut to n tokens) runs from an empty cache in both engines: llama.cpp with
// one llama_batch whose every position outputs logits (2 threads, n_batch = n_ubatch = 512, its
// default f16 KV cache and flash attention choice, no extra buffer types: see Llama); tempra with load_model, Session::forward and
// an f16 KvCache, the cache llama.cpp keeps (for F32 models too: the cache type is the engines'
// shared storage rounding, so the comparison isolates the weights and the arithmetic), and
// Numerics::ggml unless the criteria say otherwise. Criteria (issue 6, issue 17):
//   - F32/F16/BF16 (kFloat): cosine >= 0.99999 at every position; top-1 identical wherever
//     llama.cpp's top-2 margin exceeds 1e-2 x that position's logit standard deviation
//     ("clear"); greedy generation of 64 tokens after the 64-token prompt identical to
//     llama.cpp's (llama_sampler_init_greedy) up to llama.cpp's first step without a clear
//     margin. BF16 (kBf16) may fall to llama.cpp's own agreement across its flash-attention
//     setting where that is lower.
//   - Q8_0: cosine >= 0.999; Q4_0, Q4_K_M, Q6_K: >= 0.998; top-1 agreement on >= 90% of the
//     clear positions.
// The file's vocab must tokenize the prompt text alike in both engines. The figures (min and mean
// cosine, top-1 agreement, greedy match length) are printed for each call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "llama.h"
#include "tempra/llm/model/decoder.h"
#include "support/files.h"
#include "support/llama_oracle.h"
#include "tempra/core/error.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::llm::oracle {

inline constexpr int kThreads = 2;
inline constexpr int kGreedySteps = 64;
inline constexpr int64_t kContext = 1024;

// Real text, so the prompts hold the token mix of real use (words, spaces, punctuation): the
// paragraph repeated until it holds at least n tokens.
std::string prompt_text(const Tokenizer& tokenizer, int n);
std::vector<int32_t> prompt_tokens(const Tokenizer& tokenizer, int n);

// One llama.cpp model and context, with every position of a batch producing logits, flash
// attention as llama.cpp chooses it (auto: on, for its CPU backend) or as `flash_attention` says.
class Llama {
 public:
  // capture_routes: keep each MoE layer's chosen experts of the last decode (routes()).
  explicit Llama(const std::filesystem::path& path, llama_flash_attn_type flash_attention = LLAMA_FLASH_ATTN_TYPE_AUTO,
                 bool capture_routes = false) {
    testing::init_llama();
    testing::last_llama_error().clear();
    // llama.cpp's plain CPU backend on every machine: no extra buffer types (use_extra_bufts),
    // whose kernels differ by CPU. On an AMX CPU (Sapphire Rapids on) the AMX buffer takes f16
    // matrices of rows a multiple of 32 and multiplies them by the activations unrounded
    // (ggml-cpu/amx/mmq.cpp: "f16 only has avx512 kernels for now"), where every other path
    // rounds them to f16 first; and it makes this llama.cpp abort while it sets up DeepSeek-V2's
    // F16 graph (ggml_backend_sched_split_graph: GGML_ASSERT(*cur_backend_id != -1)).
    llama_model_params model_params = llama_model_default_params();
    model_params.use_extra_bufts = false;
    model_ = llama_model_load_from_file(path.c_str(), model_params);
    if (model_ == nullptr) throw Error("llama.cpp cannot load " + path.string() + ": " + testing::last_llama_error());
    llama_context_params params = llama_context_default_params();
    params.n_ctx = kContext;
    params.n_batch = 512;
    params.n_ubatch = 512;
    params.flash_attn_type = flash_attention;
    params.n_seq_max = 1;
    params.n_threads = kThreads;
    params.n_threads_batch = kThreads;
    params.type_k = GGML_TYPE_F16;
    params.type_v = GGML_TYPE_F16;
    params.no_perf = true;
    if (capture_routes) {
      params.cb_eval = &Llama::observe;
      params.cb_eval_user_data = this;
    }
    ctx_ = llama_init_from_model(model_, params);
    if (ctx_ == nullptr) throw Error("llama.cpp cannot make a context for " + path.string());
    n_vocab_ = llama_vocab_n_tokens(llama_model_get_vocab(model_));
  }
  ~Llama() {
    llama_free(ctx_);
    llama_model_free(model_);
  }
  Llama(const Llama&) = delete;
  Llama& operator=(const Llama&) = delete;

  int32_t n_vocab() const { return n_vocab_; }
  std::vector<int32_t> tokenize(const std::string& text) const {
    const llama_vocab* vocab = llama_model_get_vocab(model_);
    std::vector<llama_token> ids(text.size() + 8);
    const int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                                     static_cast<int32_t>(ids.size()), false, false);
    ids.resize(static_cast<size_t>(std::max(n, 0)));
    return ids;
  }
  void clear() { llama_memory_clear(llama_get_memory(ctx_), true); }

  // Appends `ids` at positions pos0 ... and returns the logits of every one, [n, n_vocab].
  std::vector<float> decode(const std::vector<int32_t>& ids, int32_t pos0) {
    const auto n = static_cast<int32_t>(ids.size());
    routes_.clear();
    llama_batch batch = llama_batch_init(n, 0, 1);
    for (int32_t i = 0; i < n; ++i) {
      batch.token[i] = ids[static_cast<size_t>(i)];
      batch.pos[i] = pos0 + i;
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    const int32_t rc = llama_decode(ctx_, batch);
    llama_batch_free(batch);
    if (rc != 0) throw Error("llama_decode failed with " + std::to_string(rc));
    std::vector<float> out(static_cast<size_t>(n) * static_cast<size_t>(n_vocab_));
    for (int32_t i = 0; i < n; ++i) {
      const float* row = llama_get_logits_ith(ctx_, i);
      std::copy(row, row + n_vocab_, out.begin() + static_cast<std::ptrdiff_t>(i) * n_vocab_);
    }
    return out;
  }
  llama_context* context() { return ctx_; }

  // Applies the LoRA adapter GGUF at `path` (llama_adapter_lora_init) at llama.cpp's scale 1:
  // alpha / rank as the file says. The adapter lives as long as the model.
  void use_lora(const std::filesystem::path& path) {
    llama_adapter_lora* adapter = llama_adapter_lora_init(model_, path.c_str());
    if (adapter == nullptr) throw Error("llama.cpp cannot load the adapter " + path.string() + ": " + testing::last_llama_error());
    float scale = 1.0f;
    if (llama_set_adapters_lora(ctx_, &adapter, 1, &scale) != 0) throw Error("llama_set_adapters_lora failed");
  }

  // With capture_routes: per MoE layer, the experts llama.cpp chose for each token of the last
  // decode (its ffn_moe_topk-<layer> tensor: [tokens][n_expert_used], in no promised order).
  struct Routes {
    int64_t used = 0;
    std::vector<int32_t> experts;
  };
  const std::map<int, Routes>& routes() const { return routes_; }

 private:
  // The scheduler's eval callback: asks for the ffn_moe_topk tensors only, and copies them.
  static bool observe(ggml_tensor* t, bool ask, void* user) {
    constexpr std::string_view prefix = "ffn_moe_topk-";
    if (std::string_view(t->name).substr(0, prefix.size()) != prefix) return !ask;
    if (ask) return true;
    // A view of the argsort's rows (ggml_argsort_top_k): read its extent, then each row's
    // first ne[0] entries at its stride.
    std::vector<std::byte> bytes(ggml_nbytes(t));
    ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
    Routes& r = static_cast<Llama*>(user)->routes_[std::atoi(t->name + prefix.size())];
    r.used = t->ne[0];
    r.experts.resize(size_t(t->ne[0] * t->ne[1]));
    for (int64_t row = 0; row < t->ne[1]; ++row)
      for (int64_t k = 0; k < t->ne[0]; ++k)
        std::memcpy(&r.experts[size_t(row * t->ne[0] + k)], bytes.data() + row * t->nb[1] + k * t->nb[0], sizeof(int32_t));
    return true;
  }
  std::map<int, Routes> routes_;
  llama_model* model_ = nullptr;
  llama_context* ctx_ = nullptr;
  int32_t n_vocab_ = 0;
};

// Statistics of one position: llama.cpp's logits `ref` against tempra's `got`.
struct PositionCheck {
  double cosine = 0;
  bool clear = false;  // llama.cpp's top-2 margin exceeds 1e-2 x the logit standard deviation
  bool top1_equal = false;
};
size_t argmax(const float* x, size_t n);
// Whether llama.cpp's top-2 margin at `ref` exceeds 1e-2 x its logits' standard deviation.
bool clear_margin(const float* ref, size_t n);
PositionCheck check_position(const float* ref, const float* got, size_t n);

struct Figures {
  double min_cosine = 1, sum_cosine = 0;
  int positions = 0, clear = 0, clear_agree = 0;
  int after_routing_tie = 0;  // positions not held: at or after a routing near-tie
  int greedy_match = -1, greedy_clear_steps = -1;  // -1: not run
  void add(const PositionCheck& p) {
    min_cosine = std::min(min_cosine, p.cosine);
    sum_cosine += p.cosine;
    ++positions;
    if (p.clear) {
      ++clear;
      clear_agree += p.top1_equal;
    }
  }
  double mean_cosine() const { return sum_cosine / positions; }
  double agreement() const { return clear == 0 ? 1.0 : double(clear_agree) / clear; }
};

struct Criteria {
  double min_cosine;
  double min_top1_agreement;  // over the clear positions
  bool greedy;                // generate kGreedySteps tokens and require llama.cpp's up to a near-tie
  // Where llama.cpp's own logits move further than min_cosine when only its flash-attention
  // setting changes (measured on each prompt), that movement is the bound instead: no engine
  // that is not llama.cpp's exact instruction sequence can agree with it more closely than it
  // agrees with itself. BF16 needs it (see kBf16).
  bool oracle_noise_floor = false;
  // llama.cpp's roundings (see the header), unless a case holds the default (standard) numerics.
  Numerics numerics = Numerics::ggml;
  // Mixtures of experts (> 0): the experts each engine chooses for each token in each layer are
  // compared (llama.cpp's captured from its graph). From the first token the engines route
  // differently, every later position of the sequence attends to it: those positions are
  // counted, not held to the criteria, as greedy steps after a near-tie are. That first
  // disagreement must be a near-tie: tempra's margin there (DecoderBuffers::moe_margins) below
  // this, a choice that rounding may turn; a disagreement at a clear choice fails the test.
  double router_near_tie = 0;
  // The fewest positions that must be held (after any near-tie) for the comparison to count.
  int min_held_positions = 1;
};

Figures compare(const std::string& label, const std::filesystem::path& path, const std::vector<int>& prompt_lengths,
                const Criteria& criteria);

inline const std::vector<int> kPrompts = {1, 7, 64, 512};
inline constexpr Criteria kFloat{.min_cosine = 0.99999, .min_top1_agreement = 1.0, .greedy = true};
inline constexpr Criteria kQ8_0{.min_cosine = 0.999, .min_top1_agreement = 0.90, .greedy = false};
inline constexpr Criteria kLowBit{.min_cosine = 0.998, .min_top1_agreement = 0.90, .greedy = false};

// BF16: llama.cpp rounds every activation to bf16 (8 significant bits) before each weight
// product, so a last-bit difference anywhere upstream flips roundings 2^-8 wide, and its own
// logits move past the 0.99999 cosine when only its flash-attention setting or batch size
// changes (measured on this model: flash attention on vs off, min cosine 0.9999863 / 0.9999744
// / 0.9999744 on the 7- / 64- / 512-token prompts; n_ubatch 32 vs 512: 0.9999682 / 0.9999496
// on 64 / 512). tempra (ggml numerics) measured 0.9999953 / 0.9999828 / 0.9999816 against
// llama.cpp's default: closer to it than llama.cpp with flash attention off. So BF16 is held to
// 0.99999 or llama.cpp's own flash-attention-on-vs-off agreement, whichever is lower, computed on
// each prompt; top-1 and greedy criteria as for F32/F16. Exactness of the BF16 path itself is
// checked against the float64 reference of the same file (tests/llm/qwen3_test.cpp).
inline constexpr Criteria kBf16{
    .min_cosine = 0.99999, .min_top1_agreement = 1.0, .greedy = true, .oracle_noise_floor = true};
// The quantized files with the default standard numerics, as `tempra generate` runs them: the
// integer dots at every batch size (as llama.cpp), but attention in f32 at every batch size and
// no rounding of activations before f16/bf16 matrices (none here). Those roundings are the
// difference, so these cases are held to the quantized thresholds, not to ggml's bits.
inline constexpr Criteria kQ8_0Standard{
    .min_cosine = 0.999, .min_top1_agreement = 0.90, .greedy = false, .numerics = Numerics::standard};
inline constexpr Criteria kLowBitStandard{
    .min_cosine = 0.998, .min_top1_agreement = 0.90, .greedy = false, .numerics = Numerics::standard};

// `name`.gguf in `dir`, written by write_synthetic_model unless it exists.
std::filesystem::path synth_model(const std::filesystem::path& dir, const std::string& name, const SynthSpec& spec);

// A copy of `from` with the metadata keys `keys` set and those in `drop` left out (tensors
// kept), as dir/name.gguf.
std::filesystem::path with_keys(const std::filesystem::path& from, const std::filesystem::path& dir,
                                const std::string& name,
                                const std::vector<std::pair<std::string, io::GgufValue>>& keys,
                                const std::vector<std::string>& drop = {});
// `from` quantized by llama.cpp's own llama_model_quantize to `type`, as dir/name.gguf unless it
// exists (tempra's quantizer refuses mixtures of experts: llama.cpp's per-expert type rules are
// not replicated).
std::filesystem::path llama_quantized(const std::filesystem::path& from, const std::filesystem::path& dir,
                                      const std::string& name, llama_ftype type);
// load_model(path)'s error message, or "no error".
std::string load_error(const std::filesystem::path& path);
// `from` (an F32 model) quantized to the llama.cpp file type `format` (Q8_0, Q4_K_M, ...) as
// `name`.gguf in `dir` by app::quantize_model, unless it exists.
std::filesystem::path quantized_model(const std::filesystem::path& from, const std::filesystem::path& dir,
                                      const std::string& name, const std::string& format);

}  // namespace tempra::llm::oracle
