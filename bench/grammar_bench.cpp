// bench/grammar_bench.cpp: the cost of a grammar mask over a whole vocabulary, tempra's
// GrammarMatcher against llama.cpp's grammar sampler (the oracle's libllama), same grammar, same
// vocab, same token sequence, in one run.
//
// usage: grammar_bench <model.gguf with a tokenizer> [repetitions, default 5]
// For each case (a JSON Schema compiled to GBNF by tempra, handed to both engines as GBNF; and
// tests/llm/grammars/json.gbnf), a document valid under it is tokenized with the model's
// tokenizer and walked token by token: at each step both engines compute the allowed set over
// the whole vocabulary (tempra: fill_mask; llama.cpp: llama_sampler_apply on every token's
// candidate), then both accept the document's token. Each repetition starts from fresh
// matchers (tempra's state and mask caches cold). Prints p50/p99/mean per step and the ratio.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/llm/decode/grammar_matcher.h"
#include "tempra/llm/decode/json_schema.h"
#include "tempra/llm/runtime/generator.h"
#include "tempra/llm/tokenizer/tokenizer.h"

using namespace tempra;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct Case {
  std::string name, gbnf, document;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: grammar_bench <model.gguf> [repetitions]\n");
    return 2;
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  ggml_backend_load_all_from_path(TEMPRA_ORACLE_BINS);
  llama_backend_init();
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], params);
  if (!model) {
    std::fprintf(stderr, "grammar_bench: llama.cpp cannot load %s\n", argv[1]);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(io::GgufFile::open(argv[1]));
  const auto grammar_vocab = llm::GrammarVocab::from_tokenizer(tokenizer, llm::end_of_generation_ids(tokenizer));

  const std::string schema = R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 40}, "age": {"type": "integer"},
      "email": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z0-9]+\\.[a-z]{2,4}$"},
      "tags": {"type": "array", "items": {"enum": ["admin", "user", "guest"]}, "maxItems": 5},
      "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                  "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["city"], "additionalProperties": false},
      "notes": {"type": ["string", "null"]}},
    "required": ["name", "age", "tags"], "additionalProperties": false})";
  const std::string document =
      R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.org", "tags": ["admin", "user"], )"
      R"("address": {"street": "12 St James's Square", "city": "London", "zip": "10001"}, )"
      R"("notes": "Wrote the first published algorithm for a machine; \"poetical science\" was her phrase."})";
  const std::vector<Case> cases = {
      {"JSON Schema (person, compiled by tempra)", llm::json_schema_to_gbnf(schema), document},
      {"GBNF (tests/llm/grammars/json.gbnf)", read(TEMPRA_SOURCE_DIR "/tests/llm/grammars/json.gbnf"),
       R"([{"id": 1, "tags": ["x", "y"], "score": -12.5e3, "ok": true}, {"id": 2, "text": "naïve café 東京", "next": null}])"},
  };

  std::printf("vocab %d tokens; %d repetitions, fresh matchers each\n", tokenizer.size(), reps);
  std::printf("| grammar | steps | tempra p50 / p99 / mean (ms) | llama.cpp p50 / p99 / mean (ms) | ratio (mean) |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (const Case& c : cases) {
    const auto grammar = std::make_shared<const llm::Grammar>(llm::parse_grammar(c.gbnf));
    const std::vector<int32_t> ids = tokenizer.encode(c.document, {.parse_special = false});
    std::vector<double> ours, theirs;
    std::vector<llama_token_data> data(size_t(llama_vocab_n_tokens(vocab)));
    llm::TokenMask mask;
    for (int rep = 0; rep < reps; ++rep) {
      llm::GrammarMatcher matcher(grammar, grammar_vocab);
      llama_sampler* sampler = llama_sampler_init_grammar(vocab, c.gbnf.c_str(), "root");
      if (!sampler) {
        std::fprintf(stderr, "grammar_bench: llama.cpp refused the grammar of %s\n", c.name.c_str());
        return 1;
      }
      for (size_t i = 0; i <= ids.size(); ++i) {
        double t0 = now_ms();
        matcher.fill_mask(mask);
        ours.push_back(now_ms() - t0);
        for (size_t t = 0; t < data.size(); ++t) data[t] = {llama_token(t), 0.0f, 0.0f};
        llama_token_data_array array{data.data(), data.size(), -1, false};
        t0 = now_ms();
        llama_sampler_apply(sampler, &array);
        theirs.push_back(now_ms() - t0);
        if (i == ids.size()) break;
        if (!mask.allowed(ids[i]) || !matcher.accept(ids[i])) {
          std::fprintf(stderr, "grammar_bench: %s: token %zu refused\n", c.name.c_str(), i);
          return 1;
        }
        llama_sampler_accept(sampler, ids[i]);
      }
      llama_sampler_free(sampler);
    }
    double sum_ours = 0, sum_theirs = 0;
    for (double v : ours) sum_ours += v;
    for (double v : theirs) sum_theirs += v;
    const double mean_ours = sum_ours / double(ours.size()), mean_theirs = sum_theirs / double(theirs.size());
    std::printf("| %s | %zu | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %.1fx |\n", c.name.c_str(), ids.size() + 1,
                percentile(ours, 0.5), percentile(ours, 0.99), mean_ours, percentile(theirs, 0.5),
                percentile(theirs, 0.99), mean_theirs, mean_theirs / mean_ours);
  }
  llama_model_free(model);
  return 0;
}
