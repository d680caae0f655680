// tests/llm/nanochat_oracle_test.cpp: the model and tokenizer nanochat's pipeline trained
// (scripts/nanochat.sh, PRESET=mini, run by the nanochat_pipeline case into TEMPRA_NANOCHAT_DIR)
// against llama.cpp (the oracle):
//   - the trained tokenizer gives identical ids in both engines on the whole validation text and
//     on a chat rendered with its template (special tokens parsed);
//   - the exported F32 model's logits: cosine >= 0.99999 at every position of 1-, 7-, 64- and
//     256-token prompts, top-1 identical at every clear position, and 64 greedy tokens identical
//     up to a near-tie (logit_oracle.h's kFloat, stricter than the 0.9999); the Q8_0
//     export under the Qwen3 oracle's Q8_0 thresholds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "llm/logit_oracle.h"
#include "support/files.h"

namespace tempra::llm::oracle {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = TEMPRA_NANOCHAT_DIR;

TEST(NanochatOracle, the_trained_tokenizer_gives_llama_cpps_ids) {
  const fs::path model = kDir / "chat.gguf";
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run the nanochat_pipeline case first";
  const Tokenizer tokenizer = Tokenizer::from_gguf(io::GgufFile::open(model));
  testing::init_llama();
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  llama_model* lm = llama_model_load_from_file(model.c_str(), params);
  ASSERT_NE(lm, nullptr) << testing::last_llama_error();
  const llama_vocab* vocab = llama_model_get_vocab(lm);
  const std::string chat =
      "<|im_start|>user\nWhat is 12 + 30?<|im_end|>\n<|im_start|>assistant\n12 + 30 = 42.<|im_end|>\n";
  for (const std::string& text : {testing::read_text(kDir / "data/val_000.txt"), chat}) {
    for (const bool parse_special : {true, false}) {
      std::vector<llama_token> theirs(text.size() + 8);
      const int32_t n = llama_tokenize(vocab, text.data(), int32_t(text.size()), theirs.data(), int32_t(theirs.size()),
                                       false, parse_special);
      ASSERT_GE(n, 0);
      theirs.resize(size_t(n));
      EXPECT_EQ(tokenizer.encode(text, {.parse_special = parse_special}), theirs)
          << text.size() << " bytes, parse_special " << parse_special;
      std::printf("%zu bytes -> %d tokens, identical ids (parse_special %d)\n", text.size(), n, parse_special);
    }
  }
  llama_model_free(lm);
}

TEST(NanochatOracle, the_exported_f32_model_matches_llama_cpp) {
  compare("nanochat F32", kDir / "chat.gguf", {1, 7, 64, 256}, kFloat);
}

TEST(NanochatOracle, the_exported_q8_0_model_matches_llama_cpp) {
  compare("nanochat Q8_0", kDir / "chat-q8_0.gguf", {1, 7, 64, 256}, kQ8_0);
}

}  // namespace
}  // namespace tempra::llm::oracle
