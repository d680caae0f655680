// tests/llm/logit_oracle.cpp: see logit_oracle.h.
#include "llm/logit_oracle.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "support/files.h"

#include "quantize.h"
#include "tempra/core/exec_context.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/runtime/session.h"

namespace tempra::llm::oracle {

namespace fs = std::filesystem;

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

// The first position of `ids` that llama.cpp (`routes`, captured from one decode of all of them)
// routes to other experts than tempra does in some layer, from one tempra pass over all of them;
// ids.size() when they agree everywhere. A disagreement where tempra's choice was clear (margin
// at least `near_tie`) fails the test: routing there is a bug, not rounding.
int first_routing_difference(ExecContext& ctx, const DecoderModel& model, const std::vector<int32_t>& ids,
                             const std::map<int, Llama::Routes>& routes, double near_tie, const std::string& label) {
  const auto n = int64_t(ids.size());
  const int64_t used = model.config().n_expert_used;
  KvCache cache = model.make_cache(ctx, n, KvCacheType::f16);
  const auto buffers = model.make_buffers(ctx, n, 1, n);
  const SequenceRows seq{&cache, ids, 1};
  model.forward(ctx, std::span<const SequenceRows>(&seq, 1), *buffers);
  const auto& b = dynamic_cast<const DecoderBuffers&>(*buffers);
  // tempra keeps routes per MoE layer, counted from the first after the leading dense ones.
  const int lead = model.config().n_layer_dense_lead;
  EXPECT_EQ(routes.size(), size_t(model.config().n_layer - lead)) << label << ": llama.cpp's routes of every MoE layer";
  for (int64_t i = 0; i < n; ++i) {
    for (const auto& [layer, theirs] : routes) {
      EXPECT_EQ(theirs.used, used) << label;
      EXPECT_EQ(int64_t(theirs.experts.size()), n * used) << label << ": llama.cpp's routes of layer " << layer;
      if (theirs.used != used || int64_t(theirs.experts.size()) != n * used) return 0;
      std::vector<int32_t> a(theirs.experts.begin() + i * used, theirs.experts.begin() + (i + 1) * used);
      const size_t at = size_t(layer - lead) * size_t(n) + size_t(i);
      std::vector<int32_t> ours(b.moe_routes.begin() + ptrdiff_t(at) * used, b.moe_routes.begin() + ptrdiff_t(at + 1) * used);
      std::sort(a.begin(), a.end());
      std::sort(ours.begin(), ours.end());
      if (a == ours) continue;
      const float margin = b.moe_margins[at];
      std::printf("[oracle] %s prompt %3lld: position %lld, layer %d: llama.cpp chose experts", label.c_str(),
                  static_cast<long long>(n), static_cast<long long>(i), layer);
      for (int32_t e : a) std::printf(" %d", e);
      std::printf(", tempra");
      for (int32_t e : ours) std::printf(" %d", e);
      std::printf(" (tempra's margin %.2e)\n", double(margin));
      EXPECT_LT(margin, near_tie) << label << ": position " << i << ", layer " << layer
                                  << ": llama.cpp chose other experts where tempra's choice was clear";
      return int(i);
    }
  }
  return int(n);
}

Figures compare(const std::string& label, const fs::path& path, const std::vector<int>& prompt_lengths,
                const Criteria& criteria) {
  const auto start = std::chrono::steady_clock::now();
  Llama llama(path);
  ExecContext ctx({.threads = kThreads});
  const std::unique_ptr<Model> loaded = load_model(path);
  auto* decoder = dynamic_cast<DecoderModel*>(loaded.get());
  if (decoder == nullptr) throw Error(path.string() + " is not a decoder model");
  decoder->set_numerics(criteria.numerics);
  const DecoderModel& model = *decoder;
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
  // The routes come from a second context, so observing its graph cannot touch the logits'.
  std::unique_ptr<Llama> llama_routes;
  if (criteria.router_near_tie > 0 && model.config().n_expert > 0)
    llama_routes = std::make_unique<Llama>(path, LLAMA_FLASH_ATTN_TYPE_AUTO, true);
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
      std::printf("[oracle] %s prompt %3d: llama.cpp flash attention on vs off, min cosine %.8f\n",
                  label.c_str(), n, self_agreement);
    }
    Session session(ctx, model, session_options);
    const Array got = session.forward(ctx, ids);
    EXPECT_EQ(got.shape(), (Dims{n, static_cast<int64_t>(n_vocab)}));
    const float* g = got.data<float>();
    double min_cosine = 1;
    int first_difference = n;
    if (llama_routes) {
      llama_routes->clear();
      llama_routes->decode(ids, 0);
      first_difference =
          first_routing_difference(ctx, model, ids, llama_routes->routes(), criteria.router_near_tie, label);
    }
    for (int i = 0; i < n; ++i) {
      if (i >= first_difference) {
        figures.after_routing_tie += n - i;
        std::printf("[oracle] %s prompt %3d: the engines route position %d differently; the %d positions from it "
                    "are not held\n",
                    label.c_str(), n, i, n - i);
        break;
      }
      const PositionCheck p = check_position(ref.data() + size_t(i) * n_vocab, g + size_t(i) * n_vocab, n_vocab);
      figures.add(p);
      min_cosine = std::min(min_cosine, p.cosine);
      EXPECT_GE(p.cosine, bound) << label << ": prompt of " << n << " tokens, position " << i;
      if (criteria.min_top1_agreement >= 1.0 && p.clear) {
        EXPECT_TRUE(p.top1_equal) << label << ": prompt of " << n << " tokens, position " << i
                                  << ": top-1 differs though llama.cpp's margin is clear";
      }
    }
    std::printf("[oracle] %s prompt %3d: min cosine %.8f\n", label.c_str(), n, min_cosine);
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
    // Where the engines route llama.cpp's path (prompt and its tokens) differently, the steps
    // held end.
    if (llama_routes) {
      std::vector<int32_t> path_ids = ids;
      path_ids.insert(path_ids.end(), ref_tokens.begin(), ref_tokens.end());
      llama_routes->clear();
      llama_routes->decode(path_ids, 0);
      const int differ =
          first_routing_difference(ctx, model, path_ids, llama_routes->routes(), criteria.router_near_tie, label);
      if (differ < int(path_ids.size()))
        first_unclear = std::min(first_unclear, std::max(0, differ - int(ids.size()) + 1));
    }
    figures.greedy_match = match;
    figures.greedy_clear_steps = first_unclear;
    EXPECT_GE(match, first_unclear) << label << ": greedy generation differs at step " << match
                                    << " before llama.cpp's first near-tie (step " << first_unclear << ")";
  }

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[oracle] %-8s positions %4d  cosine min %.8f mean %.8f  top-1 %d/%d clear (%.2f%%)", label.c_str(),
              figures.positions, figures.min_cosine, figures.mean_cosine(), figures.clear_agree, figures.clear,
              100.0 * figures.agreement());
  if (figures.greedy_match >= 0)
    std::printf("  greedy %d/%d identical (first near-tie at step %d)", figures.greedy_match, kGreedySteps,
                figures.greedy_clear_steps);
  if (figures.after_routing_tie > 0)
    std::printf("  %d positions after a routing difference", figures.after_routing_tie);
  std::printf("  (%.1f s)\n", seconds);
  std::fflush(stdout);
  EXPECT_GE(figures.agreement(), criteria.min_top1_agreement) << label;
  EXPECT_GE(figures.positions, criteria.min_held_positions)
      << label << ": too few positions were held to the criteria (the rest followed a routing difference)";
  if (criteria.greedy) {
    EXPECT_GT(figures.greedy_clear_steps, 0) << label << ": no greedy step was held (a near-tie came first)";
  }
  return figures;
}

fs::path with_keys(const fs::path& from, const fs::path& dir, const std::string& name,
                   const std::vector<std::pair<std::string, io::GgufValue>>& keys,
                   const std::vector<std::string>& drop) {
  const io::GgufFile in = io::GgufFile::open(from);
  io::GgufWriter w;
  for (const auto& [k, v] : in.metadata().entries())
    if (std::find(drop.begin(), drop.end(), k) == drop.end()) w.metadata().add(k, v);
  for (const auto& [k, v] : keys) w.metadata().set(k, v);
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const io::GgufTensorInfo& t = in.tensors()[i];
    w.add_tensor(t.name, t.ggml_type, std::span<const int64_t>(t.ne.data(), t.n_dims), in.tensor_bytes(i));
  }
  const fs::path out = dir / (name + ".gguf");
  w.write(out);
  return out;
}

fs::path llama_quantized(const fs::path& from, const fs::path& dir, const std::string& name, llama_ftype type) {
  const fs::path path = dir / (name + ".gguf");
  if (!fs::exists(path)) {
    testing::init_llama();
    llama_model_quantize_params params = llama_model_quantize_default_params();
    params.ftype = type;
    params.nthread = kThreads;
    if (llama_model_quantize(from.c_str(), path.c_str(), &params) != 0)
      throw Error("llama_model_quantize failed on " + from.string());
  }
  return path;
}

std::string load_error(const fs::path& path) {
  try {
    load_model(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

fs::path synth_model(const fs::path& dir, const std::string& name, const SynthSpec& spec) {
  const fs::path path = dir / (name + ".gguf");
  if (!fs::exists(path)) write_synthetic_model(path, spec);
  return path;
}

fs::path quantized_model(const fs::path& from, const fs::path& dir, const std::string& name,
                         const std::string& format) {
  const fs::path path = dir / (name + ".gguf");
  if (!fs::exists(path)) {
    const app::FileType* type = app::find_file_type(format);
    if (type == nullptr) throw Error("unknown file type " + format);
    app::quantize_model(from, path, *type, {.threads = kThreads});
  }
  return path;
}

}  // namespace tempra::llm::oracle
