// tests/train/finetune_test.cpp: fine-tuning data (train/dataset.h) and the training loop
// (train/finetune.h): which tokens the loss counts, every bad line named, the eval split, a
// falling loss, and a resume from a checkpoint that continues bit for bit.
#include "tempra/train/finetune.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/errors.h"
#include "support/files.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/synth.h"
#include "tempra/ops/ops.h"

namespace tempra::train {
namespace {

namespace fs = std::filesystem;

fs::path scratch() { return testing::scratch_dir("tempra_finetune_test"); }

const fs::path& base_model() {
  static const fs::path path = [] {
    // A small Qwen3 with the synthesizer's byte-level vocab (any text encodes).
    const fs::path p = scratch() / "base.gguf";
    llm::SynthSpec spec{.n_layer = 2, .n_embd = 64, .n_ff = 128, .n_head = 2, .n_head_kv = 1, .head_dim = 32,
                        .n_vocab = 600, .context_length = 512, .weight_type = DType::f32};
    llm::write_synthetic_model(p, spec);
    return p;
  }();
  return path;
}

const llm::Tokenizer& tokenizer() {
  static const llm::Tokenizer t = llm::Tokenizer::from_gguf(io::GgufModel::open(base_model()).metadata());
  return t;
}

fs::path write_data(const std::string& name, const std::string& text) {
  const fs::path path = scratch() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string chat(const std::string& q, const std::string& a) {
  return R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": ")" + q +
         R"("}, {"role": "assistant", "content": ")" + a + R"("}]})";
}

std::string counted_text(const Example& e) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < e.tokens.size(); ++i)
    if (e.counted[i]) ids.push_back(e.tokens[i]);
  return tokenizer().decode(ids);
}

TEST(Dataset, a_chat_counts_only_the_assistants_tokens_through_its_end_of_turn) {
  const fs::path data = write_data("chat.jsonl", chat("Capital of France?", "Paris.") + "\n\n" +
                                                     chat("Two plus two?", "Four.") + "\n");
  const std::vector<Example> ex = read_examples(data, tokenizer(), "", 512);  // no template: ChatML
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].line, 1);
  EXPECT_EQ(ex[1].line, 3);
  EXPECT_EQ(counted_text(ex[0]), "Paris.<|im_end|>");
  EXPECT_EQ(counted_text(ex[1]), "Four.<|im_end|>");
  EXPECT_EQ(tokenizer().decode(ex[0].tokens),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n"
            "<|im_start|>assistant\nParis.<|im_end|>\n");
}

// Qwen3's own template (tests/goldens/chat_templates.json, jinja2's rendering checked by
// tests/llm/chat_template_test.cpp): every assistant turn of a multi-turn chat is counted, the
// last with the empty think block the template gives it.
TEST(Dataset, every_assistant_turn_counts_under_qwen3s_template) {
  std::ifstream in(std::string(TEMPRA_GOLDEN_DIR) + "/chat_templates.json");
  const std::string qwen3 = nlohmann::json::parse(in).at("templates").at("qwen3").get<std::string>();
  const fs::path data = write_data(
      "turns.jsonl", R"({"messages": [{"role": "user", "content": "One?"}, {"role": "assistant", "content": "1."}, )"
                     R"({"role": "user", "content": "Two?"}, {"role": "assistant", "content": "2."}]})" "\n");
  const std::vector<Example> ex = read_examples(data, tokenizer(), qwen3, 512);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(counted_text(ex[0]), "1.<|im_end|><think>\n\n</think>\n\n2.<|im_end|>");
  EXPECT_EQ(tokenizer().decode(ex[0].tokens),
            "<|im_start|>user\nOne?<|im_end|>\n<|im_start|>assistant\n1.<|im_end|>\n<|im_start|>user\nTwo?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n2.<|im_end|>\n");
}

TEST(Dataset, text_lines_and_plain_text_count_every_token) {
  const std::vector<Example> lines =
      read_examples(write_data("text.jsonl", R"({"text": "hello there world"})" "\n"), tokenizer(), "", 64);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(counted_text(lines[0]), "hello there world");
  // Plain text is cut into examples of at most --ctx tokens.
  std::string text;
  for (int i = 0; i < 40; ++i) text += "a few words of plain text. ";
  const std::vector<Example> chunks = read_examples(write_data("plain.txt", text), tokenizer(), "", 50);
  ASSERT_GT(chunks.size(), 2u);
  size_t total = 0;
  for (const Example& e : chunks) {
    EXPECT_LE(e.tokens.size(), 50u);
    total += e.tokens.size();
  }
  EXPECT_EQ(total, tokenizer().encode(text, {.parse_special = true, .add_special = true}).size());
}

void expect_data_error(const std::string& content, const std::string& part, int64_t ctx = 512) {
  const fs::path path = write_data("bad.jsonl", content);
  const std::string message = testing::error_message([&] { read_examples(path, tokenizer(), "", ctx); });
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(Dataset, every_bad_line_is_named) {
  const std::string good = chat("q", "a") + "\n";
  expect_data_error(good + "{\"messages\": [\n", "bad.jsonl:2: malformed JSON");
  expect_data_error(good + good + "[1, 2]\n", "bad.jsonl:3: not a JSON object");
  expect_data_error(R"({"prompt": "x"})", "bad.jsonl:1: neither \"messages\" nor a string \"text\"");
  expect_data_error(R"({"messages": [{"content": "x"}]})", ":1: message 0 has no string \"role\"");
  expect_data_error(R"({"messages": [{"role": "user"}]})", ":1: message 0 has no string \"content\"");
  expect_data_error(R"({"messages": [{"role": "wizard", "content": "x"}]})", "role 'wizard'");
  expect_data_error(R"({"messages": [{"role": "user", "content": "x"}]})", ":1: the conversation has no assistant");
  expect_data_error(R"({"messages": []})", "non-empty array");
  expect_data_error(good + R"({"text": "a long, long, long, long, long, long, long, long, long example"})",
                    "bad.jsonl:2: the example is", 40);
  expect_data_error("{\"text\": \"\xff\xfe\"}\n", "bad.jsonl:1: malformed JSON");
  expect_data_error("\n\n", "no examples");
  const std::string message =
      testing::error_message([&] { read_examples(write_data("data.JSON", good), tokenizer(), "", 512); });
  EXPECT_NE(message.find("data.JSON: a .json file"), std::string::npos) << message;
}

TEST(Finetune, the_eval_split_is_a_seeded_partition) {
  std::vector<Example> all;
  for (int i = 0; i < 10; ++i) all.push_back(Example{.tokens = {1, 2}, .counted = {1, 1}, .line = i + 1});
  const Split a = split_examples(all, 0.2, 7), b = split_examples(all, 0.2, 7), c = split_examples(all, 0.2, 8);
  ASSERT_EQ(a.eval.size(), 2u);
  EXPECT_EQ(a.train.size(), 8u);
  EXPECT_EQ(a.eval[0].line, b.eval[0].line);
  EXPECT_EQ(a.eval[1].line, b.eval[1].line);
  EXPECT_TRUE(a.eval[0].line != c.eval[0].line || a.eval[1].line != c.eval[1].line);
  EXPECT_EQ(split_examples(all, 0.01, 1).eval.size(), 1u);  // a positive fraction holds one out at least
  EXPECT_EQ(split_examples(all, 0.0, 1).eval.size(), 0u);
}

struct Colors {
  llm::Qwen3Model model = llm::Qwen3Model::load(base_model());
  Qwen3Weights weights = Qwen3Weights::of(model);
  std::vector<Example> examples;
  Colors() {
    std::string text;
    for (const char* qa : {"sky|blue", "grass|green", "snow|white", "coal|black", "sun|yellow", "rose|red"})
      text += chat(std::string(qa).substr(0, std::string(qa).find('|')),
                   std::string(qa).substr(std::string(qa).find('|') + 1)) + "\n";
    examples = read_examples(write_data("colors.jsonl", text), tokenizer(), "", 256);
  }
  Finetuner tuner(ExecContext& ctx, uint64_t seed = 1, int64_t rank = 4) const {
    Split s = split_examples(examples, 1.0 / 6, seed);
    return Finetuner(ctx, weights, std::move(s.train), std::move(s.eval),
                     {.lora = {.rank = rank, .alpha = 8, .dropout = 0.1, .targets = parse_targets("all")},
                      .lr = 1e-2, .batch = 2, .seed = seed});
  }
};

std::vector<std::vector<float>> values(ExecContext& ctx, const Finetuner& t) {
  std::vector<std::vector<float>> out;
  for (const optim::Param& p : t.adapter().parameters()) out.push_back(to_vector<float>(ctx, p.value));
  return out;
}

TEST(Finetune, the_training_loss_falls) {
  ExecContext ctx;
  const Colors run;
  Finetuner t = run.tuner(ctx);
  ASSERT_TRUE(t.has_eval());
  const double eval_before = t.eval_loss();
  double first = 0, last = 0;  // mean losses of the first and the last five steps
  for (int i = 0; i < 40; ++i) {
    const StepResult r = t.train_step();
    EXPECT_GT(r.counted, 0);
    if (i < 5) first += r.loss / 5;
    if (i >= 35) last += r.loss / 5;
  }
  const double eval_after = t.eval_loss();
  std::printf("mean loss of steps 1-5 %.4f, of steps 36-40 %.4f; eval %.4f -> %.4f\n", first, last, eval_before,
              eval_after);
  EXPECT_EQ(t.steps_done(), 40);
  EXPECT_LT(last, 0.9 * first);
  EXPECT_LT(eval_after, eval_before);
}

TEST(Finetune, a_resumed_run_equals_a_straight_one_bit_for_bit) {
  ExecContext ctx;
  const Colors run;
  Finetuner straight = run.tuner(ctx);
  for (int i = 0; i < 6; ++i) straight.train_step();

  const fs::path ckpt = scratch() / "half.ckpt";
  {
    Finetuner first = run.tuner(ctx);
    for (int i = 0; i < 3; ++i) first.train_step();
    first.save(ckpt);
  }
  Finetuner resumed = run.tuner(ctx);
  resumed.load(ckpt);
  EXPECT_EQ(resumed.steps_done(), 3);
  for (int i = 0; i < 3; ++i) resumed.train_step();
  EXPECT_EQ(values(ctx, straight), values(ctx, resumed));

  // A checkpoint of another configuration is refused by name, and changes nothing.
  Finetuner other = run.tuner(ctx, 2);
  const auto before = values(ctx, other);
  const std::string message = testing::error_message([&] { other.load(ckpt); });
  EXPECT_NE(message.find("seed"), std::string::npos) << message;
  EXPECT_EQ(values(ctx, other), before);
  EXPECT_EQ(other.steps_done(), 0);
  Finetuner wider = run.tuner(ctx, 1, 8);
  EXPECT_FALSE(testing::error_message([&] { wider.load(ckpt); }).empty());
}

}  // namespace
}  // namespace tempra::train
