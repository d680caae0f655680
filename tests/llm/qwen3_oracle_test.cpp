// tests/llm/qwen3_oracle_test.cpp: tempra's Qwen3 forward pass against llama.cpp's (the oracle,
// libllama from tools/oracle/install.sh), logit for logit, on the same GGUF and the same tokens.
//
// Models: synthesized by llm::write_synthetic_qwen3 with Qwen3's real tokenizer and vocab
// (151936 rows) and a small body (SynthQwen3Spec::tiny(): 2 layers, hidden 256, 4 query / 2 KV
// heads of dim 128), in F32, F16 and BF16, and quantized from the F32 file by `tempra quantize`
// (app::quantize_model, byte-identical to llama-quantize) to Q8_0, Q4_0, Q4_K_M and Q6_K. One
// more run (label `heavy`) uses the real Qwen3-0.6B shape in F16.
//
// Each prompt (1, 7, 64 and 512 tokens of an English paragraph, tokenized by tempra's tokenizer)
// runs from an empty cache in both engines: llama.cpp with one llama_batch whose every position
// outputs logits (2 threads, n_batch = n_ubatch = 512, its default f16 KV cache and flash
// attention choice); tempra with Session::forward and an f16 KvCache, the cache llama.cpp
// keeps (for the F32 model too: the cache type is the engines' shared storage rounding, so the
// comparison isolates the weights and the arithmetic), and Numerics::ggml: activations
// rounded to f16/bf16 before f16/bf16 weight matrices and, for batches under 64 tokens, ggml's
// f16-accumulator flash attention, as llama.cpp's CPU backend computes them. Measured before
// each (tiny model): BF16 cosine min 0.99996 with exact activations, 0.99998 with rounded ones;
// the 7-token prompt 0.999984 with f32 attention, 0.999995 with ggml's. Criteria (issue 6):
//   - F32/F16/BF16: cosine >= 0.99999 at every position (BF16: or llama.cpp's own agreement
//     with itself across its flash-attention setting where that is lower, see kBf16); top-1
//     identical wherever llama.cpp's top-2 margin exceeds 1e-2 x that position's logit
//     standard deviation ("clear"); greedy generation of 64 tokens after the 64-token prompt
//     identical to llama.cpp's (llama_sampler_init_greedy) up to llama.cpp's first step without
//     a clear margin.
//   - Q8_0: cosine >= 0.999; Q4_0, Q4_K_M, Q6_K: >= 0.998; top-1 agreement on >= 90% of the
//     clear positions.
// The figures (min and mean cosine, top-1 agreement, greedy match length) are printed for each
// format. The models live in a per-process temporary folder, removed when the tests end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "llama.h"
#include "quantize.h"
#include "support/files.h"
#include "support/llama_oracle.h"
#include "tempra/core/exec_context.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/runtime/session.h"
#include "tempra/llm/model/qwen3_synth.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/ops/ops.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

using testing::init_llama;
using testing::last_llama_error;

constexpr int kThreads = 2;
constexpr int kGreedySteps = 64;
constexpr int64_t kContext = 1024;

const fs::path& scratch_dir() {
  return testing::scratch_dir("tempra-qwen3-oracle");
}

// Removes the generated models when the test program ends (pass or fail).
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(scratch_dir(), ignored);
  }
};
const auto* const cleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

SynthQwen3Spec tiny_spec(DType weight_type) {
  SynthQwen3Spec spec = SynthQwen3Spec::tiny();
  spec.weight_type = weight_type;
  spec.seed = 20261130;
  spec.tokenizer_dir = TEMPRA_QWEN3_TOKENIZER_DIR;
  return spec;
}

fs::path synth_model(const std::string& name, const SynthQwen3Spec& spec) {
  const fs::path path = scratch_dir() / (name + ".gguf");
  if (!fs::exists(path)) write_synthetic_qwen3(path, spec);
  return path;
}

// The tiny model in `format`: F32/F16/BF16 synthesized directly, the rest quantized from F32.
fs::path tiny_model(const std::string& format) {
  if (format == "F32") return synth_model("tiny-F32", tiny_spec(DType::f32));
  if (format == "F16") return synth_model("tiny-F16", tiny_spec(DType::f16));
  if (format == "BF16") return synth_model("tiny-BF16", tiny_spec(DType::bf16));
  const fs::path path = scratch_dir() / ("tiny-" + format + ".gguf");
  if (!fs::exists(path)) {
    const app::FileType* type = app::find_file_type(format);
    if (type == nullptr) throw Error("unknown file type " + format);
    app::quantize_model(tiny_model("F32"), path, *type, {.threads = kThreads});
  }
  return path;
}

// Real text, so the prompts hold the token mix of real use (words, spaces, punctuation): the
// paragraph repeated until it holds at least n tokens.
std::string prompt_text(const Tokenizer& tokenizer, int n) {
  const std::string paragraph =
      "The river had been rising for three days before anyone in the valley thought to worry. "
      "Old Marta, who kept the ferry, said she had seen it climb like this only twice, and both "
      "times the water had stopped a hand's width below the mill door. The miller's sons laughed "
      "and stacked sandbags anyway, because their father told them to, and because the rain, "
      "falling steadily on the slate roofs, made every other kind of work impossible. ";
  std::string text = paragraph;
  while (static_cast<int>(tokenizer.encode(text, {.parse_special = false}).size()) < n) text += paragraph;
  return text;
}

std::vector<int32_t> prompt_tokens(const Tokenizer& tokenizer, int n) {
  std::vector<int32_t> ids = tokenizer.encode(prompt_text(tokenizer, n), {.parse_special = false});
  ids.resize(static_cast<size_t>(n));
  return ids;
}

// One llama.cpp model and context, with every position of a batch producing logits, flash
// attention as llama.cpp chooses it (auto: on, for its CPU backend) or as `flash_attention` says.
class Llama {
 public:
  explicit Llama(const fs::path& path, llama_flash_attn_type flash_attention = LLAMA_FLASH_ATTN_TYPE_AUTO) {
    init_llama();
    last_llama_error().clear();
    model_ = llama_model_load_from_file(path.c_str(), llama_model_default_params());
    if (model_ == nullptr) throw Error("llama.cpp cannot load " + path.string() + ": " + last_llama_error());
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

 private:
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

size_t argmax(const float* x, size_t n) {
  return static_cast<size_t>(std::max_element(x, x + n) - x);
}

// Whether llama.cpp's top-2 margin at `ref` exceeds 1e-2 x its logits' standard deviation.
bool clear_margin(const float* ref, size_t n) {
  double sum = 0, sum2 = 0;
  float first = -INFINITY, second = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    sum += ref[i];
    sum2 += double(ref[i]) * ref[i];
    if (ref[i] > first) {
      second = first;
      first = ref[i];
    } else if (ref[i] > second) {
      second = ref[i];
    }
  }
  const double mean = sum / double(n);
  const double std = std::sqrt(std::max(0.0, sum2 / double(n) - mean * mean));
  return double(first) - double(second) > 1e-2 * std;
}

PositionCheck check_position(const float* ref, const float* got, size_t n) {
  double dot = 0, rr = 0, gg = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += double(ref[i]) * got[i];
    rr += double(ref[i]) * ref[i];
    gg += double(got[i]) * got[i];
  }
  return {.cosine = dot / std::sqrt(rr * gg), .clear = clear_margin(ref, n), .top1_equal = argmax(ref, n) == argmax(got, n)};
}

struct Figures {
  double min_cosine = 1, sum_cosine = 0;
  int positions = 0, clear = 0, clear_agree = 0;
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
};

Figures compare(const std::string& label, const fs::path& path, const std::vector<int>& prompt_lengths,
                const Criteria& criteria) {
  const auto start = std::chrono::steady_clock::now();
  Llama llama(path);
  ExecContext ctx({.threads = kThreads});
  Qwen3Model model = Qwen3Model::load(path);
  model.set_numerics(criteria.numerics);
  const Tokenizer tokenizer = Tokenizer::from_gguf(io::GgufFile::open(path));
  const auto n_vocab = static_cast<size_t>(model.config().n_vocab);
  EXPECT_EQ(llama.n_vocab(), model.config().n_vocab);
  const SessionOptions session_options{.context = kContext, .cache_type = KvCacheType::f16, .batch = 512};

  // The file's vocab means the same to both: the prompt text tokenizes alike.
  const std::string text = prompt_text(tokenizer, *std::max_element(prompt_lengths.begin(), prompt_lengths.end()));
  EXPECT_EQ(tokenizer.encode(text, {.parse_special = false}), llama.tokenize(text)) << label;

  Figures figures;
  std::unique_ptr<Llama> llama_without_fa;
  if (criteria.oracle_noise_floor) llama_without_fa = std::make_unique<Llama>(path, LLAMA_FLASH_ATTN_TYPE_DISABLED);
  for (int n : prompt_lengths) {
    const std::vector<int32_t> ids = prompt_tokens(tokenizer, n);
    llama.clear();
    const std::vector<float> ref = llama.decode(ids, 0);
    double bound = criteria.min_cosine;
    if (llama_without_fa) {
      llama_without_fa->clear();
      const std::vector<float> other = llama_without_fa->decode(ids, 0);
      double self_agreement = 1;
      for (int i = 0; i < n; ++i)
        self_agreement = std::min(self_agreement, check_position(ref.data() + size_t(i) * n_vocab,
                                                                 other.data() + size_t(i) * n_vocab, n_vocab)
                                                      .cosine);
      // A floor under the oracle's own figure, so a broken llama.cpp path cannot excuse anything.
      EXPECT_GE(self_agreement, 0.9999) << label << ": llama.cpp's flash attention on vs off, " << n << " tokens";
      bound = std::min(bound, self_agreement);
      std::printf("[qwen3-oracle] %s prompt %3d: llama.cpp flash attention on vs off, min cosine %.8f\n",
                  label.c_str(), n, self_agreement);
    }
    Session session(ctx, model, session_options);
    const Array got = session.forward(ctx, ids);
    EXPECT_EQ(got.shape(), (Dims{n, static_cast<int64_t>(n_vocab)}));
    const float* g = got.data<float>();
    double min_cosine = 1;
    for (int i = 0; i < n; ++i) {
      const PositionCheck p = check_position(ref.data() + size_t(i) * n_vocab, g + size_t(i) * n_vocab, n_vocab);
      figures.add(p);
      min_cosine = std::min(min_cosine, p.cosine);
      EXPECT_GE(p.cosine, bound) << label << ": prompt of " << n << " tokens, position " << i;
      if (criteria.min_top1_agreement >= 1.0 && p.clear) {
        EXPECT_TRUE(p.top1_equal) << label << ": prompt of " << n << " tokens, position " << i
                                  << ": top-1 differs though llama.cpp's margin is clear";
      }
    }
    std::printf("[qwen3-oracle] %s prompt %3d: min cosine %.8f\n", label.c_str(), n, min_cosine);
  }

  if (criteria.greedy) {
    const std::vector<int32_t> ids = prompt_tokens(tokenizer, 64);
    // llama.cpp: its greedy sampler on its own logits; note where its margin is first unclear.
    llama.clear();
    llama.decode(ids, 0);
    llama_sampler* greedy = llama_sampler_init_greedy();
    std::vector<int32_t> ref_tokens;
    int first_unclear = kGreedySteps;
    for (int step = 0; step < kGreedySteps; ++step) {
      const float* logits = llama_get_logits_ith(llama.context(), -1);
      if (first_unclear == kGreedySteps && !clear_margin(logits, n_vocab)) first_unclear = step;
      const int32_t token = llama_sampler_sample(greedy, llama.context(), -1);
      ref_tokens.push_back(token);
      llama.decode({token}, static_cast<int32_t>(ids.size()) + step);
    }
    llama_sampler_free(greedy);
    // tempra: argmax of each step's logits.
    Session session(ctx, model, session_options);
    Array logits = session.forward(ctx, ids);
    std::vector<int32_t> got_tokens;
    for (int step = 0; step < kGreedySteps; ++step) {
      const float* last = logits.data<float>() + (logits.dim(0) - 1) * static_cast<int64_t>(n_vocab);
      const auto token = static_cast<int32_t>(argmax(last, n_vocab));
      got_tokens.push_back(token);
      if (step + 1 < kGreedySteps) logits = session.forward(ctx, std::vector<int32_t>{token});
    }
    int match = 0;
    while (match < kGreedySteps && ref_tokens[size_t(match)] == got_tokens[size_t(match)]) ++match;
    figures.greedy_match = match;
    figures.greedy_clear_steps = first_unclear;
    EXPECT_GE(match, first_unclear) << label << ": greedy generation differs at step " << match
                                    << " before llama.cpp's first near-tie (step " << first_unclear << ")";
  }

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[qwen3-oracle] %-8s positions %4d  cosine min %.8f mean %.8f  top-1 %d/%d clear (%.2f%%)", label.c_str(),
              figures.positions, figures.min_cosine, figures.mean_cosine(), figures.clear_agree, figures.clear,
              100.0 * figures.agreement());
  if (figures.greedy_match >= 0)
    std::printf("  greedy %d/%d identical (first near-tie at step %d)", figures.greedy_match, kGreedySteps,
                figures.greedy_clear_steps);
  std::printf("  (%.1f s)\n", seconds);
  std::fflush(stdout);
  EXPECT_GE(figures.agreement(), criteria.min_top1_agreement) << label;
  return figures;
}

const std::vector<int> kPrompts = {1, 7, 64, 512};
constexpr Criteria kFloat{.min_cosine = 0.99999, .min_top1_agreement = 1.0, .greedy = true};
constexpr Criteria kQ8_0{.min_cosine = 0.999, .min_top1_agreement = 0.90, .greedy = false};
constexpr Criteria kLowBit{.min_cosine = 0.998, .min_top1_agreement = 0.90, .greedy = false};

TEST(Qwen3Oracle, f32_logits_and_greedy_tokens_match_llama_cpp) {
  compare("F32", tiny_model("F32"), kPrompts, kFloat);
}
TEST(Qwen3Oracle, f16_logits_and_greedy_tokens_match_llama_cpp) {
  compare("F16", tiny_model("F16"), kPrompts, kFloat);
}
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
constexpr Criteria kBf16{
    .min_cosine = 0.99999, .min_top1_agreement = 1.0, .greedy = true, .oracle_noise_floor = true};
TEST(Qwen3Oracle, bf16_logits_within_llama_cpps_own_variation_and_greedy_tokens_match) {
  compare("BF16", tiny_model("BF16"), kPrompts, kBf16);
}
TEST(Qwen3Oracle, q8_0_logits_match_llama_cpp) {
  compare("Q8_0", tiny_model("Q8_0"), kPrompts, kQ8_0);
}
TEST(Qwen3Oracle, q4_0_logits_match_llama_cpp) {
  compare("Q4_0", tiny_model("Q4_0"), kPrompts, kLowBit);
}
TEST(Qwen3Oracle, q4_k_m_logits_match_llama_cpp) {
  compare("Q4_K_M", tiny_model("Q4_K_M"), kPrompts, kLowBit);
}
TEST(Qwen3Oracle, q6_k_logits_match_llama_cpp) {
  compare("Q6_K", tiny_model("Q6_K"), kPrompts, kLowBit);
}
// The quantized files with the default standard numerics, as `tempra generate` runs them: the
// integer dots at every batch size (as llama.cpp), but attention in f32 at every batch size and
// no rounding of activations before f16/bf16 matrices (none here). Those roundings are the
// difference, so these cases are held to the quantized thresholds, not to ggml's bits.
constexpr Criteria kQ8_0Standard{
    .min_cosine = 0.999, .min_top1_agreement = 0.90, .greedy = false, .numerics = Numerics::standard};
constexpr Criteria kLowBitStandard{
    .min_cosine = 0.998, .min_top1_agreement = 0.90, .greedy = false, .numerics = Numerics::standard};
TEST(Qwen3Oracle, q8_0_standard_numerics_logits_match_llama_cpp) {
  compare("Q8_0-standard", tiny_model("Q8_0"), kPrompts, kQ8_0Standard);
}
TEST(Qwen3Oracle, q4_0_standard_numerics_logits_match_llama_cpp) {
  compare("Q4_0-standard", tiny_model("Q4_0"), kPrompts, kLowBitStandard);
}
TEST(Qwen3Oracle, q4_k_m_standard_numerics_logits_match_llama_cpp) {
  compare("Q4_K_M-standard", tiny_model("Q4_K_M"), kPrompts, kLowBitStandard);
}
TEST(Qwen3Oracle, q6_k_standard_numerics_logits_match_llama_cpp) {
  compare("Q6_K-standard", tiny_model("Q6_K"), kPrompts, kLowBitStandard);
}

// The synthetic byte-level vocab (no tokenizer folder) and a separate output matrix: llama.cpp
// loads the file, tokenizes as tempra does and computes the same logits.
TEST(Qwen3Synth, synthetic_vocab_untied_model_matches_llama_cpp) {
  SynthQwen3Spec spec = SynthQwen3Spec::tiny();
  spec.n_vocab = 1000;
  spec.tied_embeddings = false;
  spec.weight_type = DType::f32;
  spec.seed = 5;
  compare("synthetic-vocab-F32", synth_model("synthetic-vocab", spec), {1, 7, 64}, kFloat);
}

TEST(Qwen3Synth, same_seed_writes_the_same_bytes_and_another_seed_other_weights) {
  SynthQwen3Spec spec = SynthQwen3Spec::tiny();
  spec.n_vocab = 300;
  spec.n_layer = 1;
  spec.seed = 11;
  const fs::path a = synth_model("seed-a", spec), b = synth_model("seed-b", spec);
  spec.seed = 12;
  const fs::path c = synth_model("seed-c", spec);
  const auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(a), bytes(b));
  EXPECT_NE(bytes(a), bytes(c));
  // The scales the header promises, measured on the file: the embedding's std is 0.02, a
  // matrix's 1/sqrt(its row length), a norm's values 1 + N(0, 0.05).
  const io::GgufFile file = io::GgufFile::open(a);
  ExecContext ctx;
  const auto moments = [&](const std::string& name) {
    const Array t = contiguous(ctx, cast(ctx, file.tensor(name), DType::f32));
    const float* x = t.data<float>();
    double sum = 0, sum2 = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      sum += x[i];
      sum2 += double(x[i]) * x[i];
    }
    const double mean = sum / double(t.numel());
    return std::pair{mean, std::sqrt(sum2 / double(t.numel()) - mean * mean)};
  };
  EXPECT_NEAR(moments("token_embd.weight").second, 0.02, 0.001);
  EXPECT_NEAR(moments("blk.0.ffn_down.weight").second, 1.0 / std::sqrt(768.0), 0.002);
  EXPECT_NEAR(moments("blk.0.attn_q.weight").second, 1.0 / std::sqrt(256.0), 0.002);
  EXPECT_NEAR(moments("blk.0.ffn_norm.weight").first, 1.0, 0.01);
  EXPECT_NEAR(moments("blk.0.ffn_norm.weight").second, 0.05, 0.01);
}

TEST(Qwen3Synth, invalid_specs_throw_naming_the_field) {
  const auto message = [](const SynthQwen3Spec& spec) {
    try {
      write_synthetic_qwen3(scratch_dir() / "never.gguf", spec);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SynthQwen3Spec spec = SynthQwen3Spec::tiny();
  spec.n_head = 3;
  EXPECT_NE(message(spec).find("n_head 3 is not a multiple of n_head_kv 2"), std::string::npos) << message(spec);
  spec = SynthQwen3Spec::tiny();
  spec.head_dim = 63;
  EXPECT_NE(message(spec).find("head_dim 63 is odd"), std::string::npos) << message(spec);
  spec = SynthQwen3Spec::tiny();
  spec.n_vocab = 100;
  EXPECT_NE(message(spec).find("n_vocab 100 is too small"), std::string::npos) << message(spec);
  spec = SynthQwen3Spec::tiny();
  spec.tokenizer_dir = TEMPRA_QWEN3_TOKENIZER_DIR;
  spec.n_vocab = 151000;
  EXPECT_NE(message(spec).find("vocab size 151000 is smaller than the tokenizer's 151669"), std::string::npos)
      << message(spec);
  spec = SynthQwen3Spec::tiny();
  spec.weight_type = DType::i32;
  EXPECT_NE(message(spec).find("weight type must be f32, f16 or bf16"), std::string::npos) << message(spec);
  EXPECT_FALSE(fs::exists(scratch_dir() / "never.gguf"));
}

// The real Qwen3-0.6B shape (28 layers, hidden 1024, 16/8 heads), F16, the 64-token prompt.
TEST(Qwen3OracleHeavy, qwen3_0_6b_f16_logits_and_greedy_tokens_match_llama_cpp) {
  SynthQwen3Spec spec = SynthQwen3Spec::qwen3_0_6b();
  spec.weight_type = DType::f16;
  spec.seed = 20261130;
  spec.tokenizer_dir = TEMPRA_QWEN3_TOKENIZER_DIR;
  const fs::path path = synth_model("qwen3-0.6b-F16", spec);
  compare("0.6B-F16", path, {64}, kFloat);
  fs::remove(path);
}

}  // namespace
}  // namespace tempra::llm
