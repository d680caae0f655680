// tests/llm/json_schema/json_schema_samples.cpp: documents for the validator to judge.
//
// For each schema of the corpus (corpus/*.json: {"schema", "valid", "invalid"}), writes
// - N seeded generations of a synthesized model (random weights, a synthetic 512-token
//   byte-level vocab) constrained by the schema's grammar (json_schema_to_gbnf), with the
//   sampler's default chain (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05), seeds 0...N-1;
// - tempra's verdict on each hand-written document: whether the schema's grammar accepts it
//   whole (fed byte by byte, so multi-byte characters arrive split).
// validate.mjs then checks every generation with ajv and compares the verdicts with ajv's.
//
// usage: json_schema_samples <corpus dir> <out.json> [samples per schema, default 1000]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "tempra/core/timing.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/decode/json_schema.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/runtime/generator.h"

namespace fs = std::filesystem;
using namespace tempra;
using Json = nlohmann::ordered_json;

namespace {

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Every byte a token of its own, and an end token: the grammar's verdict on a whole text.
bool grammar_accepts(const std::shared_ptr<const llm::Grammar>& grammar, const std::string& text) {
  static const std::shared_ptr<const llm::GrammarVocab> bytes = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
    pieces.push_back("");
    const std::vector<int32_t> eog{256};
    return std::make_shared<const llm::GrammarVocab>(pieces, eog);
  }();
  llm::GrammarMatcher matcher(grammar, bytes);
  for (unsigned char c : text)
    if (!matcher.accept(c)) return false;
  return matcher.accept(256);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: json_schema_samples <corpus dir> <out.json> [samples per schema]\n";
    return 2;
  }
  const fs::path corpus = argv[1];
  const int samples = argc > 3 ? std::stoi(argv[3]) : 1000;
  try {
    const fs::path dir = fs::temp_directory_path() / ("tempra-json-schema-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    llm::SynthSpec spec;
    spec.n_layer = 1;
    spec.n_embd = 64;
    spec.n_ff = 128;
    spec.n_head = 2;
    spec.n_head_kv = 1;
    spec.head_dim = 32;
    spec.n_vocab = 512;
    spec.context_length = 32768;
    spec.weight_type = DType::f32;
    spec.seed = 11;
    llm::write_synthetic_model(dir / "model.gguf", spec);
    io::GgufModel gguf = io::GgufModel::open(dir / "model.gguf");
    llm::Qwen3Model model = llm::Qwen3Model::load(gguf);
    llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(gguf.metadata());
    fs::remove_all(dir);

    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(corpus))
      if (entry.path().extension() == ".json") files.push_back(entry.path());
    std::sort(files.begin(), files.end());

    ExecContext ctx;
    Json out = Json::object();
    const std::vector<int32_t> prompt = tokenizer.encode("Answer in JSON:");
    for (const fs::path& file : files) {
      const Json c = Json::parse(read(file));
      const std::string name = file.stem().string();
      auto grammar = std::make_shared<const llm::Grammar>(llm::parse_grammar(llm::json_schema_to_gbnf(c["schema"].dump())));
      Json entry = {{"schema", c["schema"]}, {"samples", Json::array()}, {"verdicts", Json::array()}};
      for (const char* kind : {"valid", "invalid"})
        for (const Json& doc : c[kind])
          entry["verdicts"].push_back({{"doc", doc}, {"tempra_accepts", grammar_accepts(grammar, doc.get<std::string>())}});

      llm::Session session(ctx, model, {.context = 32768});
      llm::Generator generator(ctx, model, tokenizer, session);
      const auto start = std::chrono::steady_clock::now();
      int64_t tokens = 0;
      for (int seed = 0; seed < samples; ++seed) {
        llm::GenerateOptions options;
        options.sampling.seed = uint64_t(seed);
        options.max_new_tokens = 30000;
        options.grammar = grammar;
        const llm::GenerationResult r = generator.generate(prompt, options);
        tokens += int64_t(r.ids.size());
        entry["samples"].push_back(
            {{"text", r.text}, {"tokens", r.ids.size()}, {"stop", std::string(llm::to_string(r.reason))}});
      }
      std::fprintf(stderr, "%s: %d samples, %lld tokens, %.1f s\n", name.c_str(), samples, (long long)tokens,
                   ms_since(start) / 1000);
      out[name] = std::move(entry);
    }
    std::ofstream(argv[2]) << out.dump(1) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "json_schema_samples: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
