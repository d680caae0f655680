// tests/train/finetune_test.cpp: fine-tuning data (train/dataset.h) and the training loop
// (train/finetune.h): which tokens the loss counts, every bad line named, the eval split, a
// falling loss, and a resume from a checkpoint that continues bit for bit.
#include "tempra/train/finetune.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <barrier>
#include <filesystem>
#include <regex>
#include <thread>
#include <fstream>
#include <string>

#include "support/errors.h"
#include "support/files.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/synth.h"
#include "tempra/train/es_trainer.h"
#include "tempra/train/reward.h"
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


// N ranks as threads of one process: what MPI_Allgatherv gives each rank, through a barrier.
class ThreadRanks {
 public:
  explicit ThreadRanks(int n) : n_(n), sync_(n), doubles_(static_cast<size_t>(n)), floats_(static_cast<size_t>(n)) {}

  class Rank final : public Communicator {
   public:
    Rank(ThreadRanks& all, int rank) : all_(all), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return all_.n_; }
    std::vector<double> allgather(std::vector<double> mine) override { return all_.gather(rank_, mine, all_.doubles_); }
    std::vector<float> allgather(std::vector<float> mine) override { return all_.gather(rank_, mine, all_.floats_); }

   private:
    ThreadRanks& all_;
    int rank_;
  };

  // Runs fn(communicator) on every rank at once.
  template <class Fn>
  void run(Fn fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < n_; ++r)
      threads.emplace_back([this, r, &fn] {
        Rank rank(*this, r);
        fn(rank);
      });
    for (std::thread& t : threads) t.join();
  }

 private:
  template <class T>
  std::vector<T> gather(int rank, std::vector<T>& mine, std::vector<std::vector<T>>& slots) {
    slots[size_t(rank)] = std::move(mine);
    sync_.arrive_and_wait();  // every rank's values are in
    std::vector<T> out;
    for (const std::vector<T>& s : slots) out.insert(out.end(), s.begin(), s.end());
    sync_.arrive_and_wait();  // every rank has read them: the slots may be reused
    return out;
  }

  int n_;
  std::barrier<> sync_;
  std::vector<std::vector<double>> doubles_;
  std::vector<std::vector<float>> floats_;
};

std::vector<std::vector<float>> param_values(ExecContext& ctx, const std::vector<optim::Param>& params) {
  std::vector<std::vector<float>> out;
  for (const optim::Param& p : params) out.push_back(to_vector<float>(ctx, p.value));
  return out;
}

// The data-parallel contract (finetune.h): 2 and 3 ranks (a batch of 4 split 2+2 and 1+1+2)
// end with the adapters of one process, bit for bit. One thread per rank, as for one process.
TEST(DataParallel, ranks_train_the_adapters_of_one_process_bit_for_bit) {
  const Colors run;
  const auto train = [&](Communicator& comm) {
    ExecContext ctx(ExecOptions{.threads = 1});
    Split s = split_examples(run.examples, 0, 1);
    Finetuner t(ctx, run.weights, std::move(s.train), {},
                {.lora = {.rank = 4, .alpha = 8, .dropout = 0.1, .targets = parse_targets("all")},
                 .lr = 1e-2, .batch = 4, .seed = 3},
                comm);
    double loss = 0;
    for (int i = 0; i < 3; ++i) loss = t.train_step().loss;
    return std::make_pair(values(ctx, t), loss);
  };
  const auto one = train(local_communicator());
  for (int n : {2, 3}) {
    ThreadRanks ranks(n);
    std::vector<std::pair<std::vector<std::vector<float>>, double>> got(static_cast<size_t>(n));
    ranks.run([&](Communicator& comm) { got[size_t(comm.rank())] = train(comm); });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(got[size_t(r)].first, one.first) << "rank " << r << " of " << n;
      EXPECT_EQ(got[size_t(r)].second, one.second) << "rank " << r << " of " << n << ": the step's loss";
    }
  }
}

// Evolution strategies over ranks exchange only fitness scalars, and end where one process does.
TEST(DataParallel, evolution_strategies_over_ranks_equal_one_process) {
  const Colors run;
  const auto evolve = [&](Communicator& comm) {
    ExecContext ctx(ExecOptions{.threads = 1});
    const LoraAdapter lora = make_lora(ctx, run.weights, {.rank = 2, .targets = parse_targets("q,v"), .seed = 4});
    EsTrainer es(ctx, run.weights, lora.parameters(), &lora, run.examples, {},
                 {.es = {.population = 6, .sigma = 0.05, .lr = 0.02, .seed = 9}, .reward = Reward::parse("loss"),
                  .batch = 3},
                 tokenizer(), comm);
    for (int i = 0; i < 2; ++i) es.train_step();
    return param_values(ctx, lora.parameters());
  };
  const auto one = evolve(local_communicator());
  ThreadRanks ranks(2);
  std::vector<std::vector<std::vector<float>>> got(2);
  ranks.run([&](Communicator& comm) { got[size_t(comm.rank())] = evolve(comm); });
  EXPECT_EQ(got[0], one);
  EXPECT_EQ(got[1], one);
}

TEST(EvolutionStrategies, the_loss_reward_rises_on_lora_and_a_resumed_run_equals_a_straight_one) {
  ExecContext ctx;
  const Colors run;
  const auto make = [&](const LoraAdapter& lora) {
    return EsTrainer(ctx, run.weights, lora.parameters(), &lora, run.examples, run.examples,
                     {.es = {.population = 8, .sigma = 0.02, .lr = 0.02, .seed = 2}, .reward = Reward::parse("loss"),
                      .batch = 3},
                     tokenizer());
  };
  const LoraConfig config{.rank = 4, .targets = parse_targets("all"), .seed = 5};
  const LoraAdapter lora = make_lora(ctx, run.weights, config);
  EsTrainer es = make(lora);
  const double before = es.eval_reward();
  for (int i = 0; i < 30; ++i) es.train_step();
  const double after = es.eval_reward();
  std::printf("loss reward %.4f -> %.4f after 30 generations\n", before, after);
  EXPECT_GT(after, before + 0.05);  // measured: -6.43 -> -6.31

  const LoraAdapter half_lora = make_lora(ctx, run.weights, config), resumed_lora = make_lora(ctx, run.weights, config);
  EsTrainer half = make(half_lora);
  for (int i = 0; i < 20; ++i) half.train_step();
  const fs::path ckpt = scratch() / "es.ckpt";
  half.save(ckpt);
  EsTrainer resumed = make(resumed_lora);
  resumed.load(ckpt);
  EXPECT_EQ(resumed.steps_done(), 20);
  for (int i = 0; i < 10; ++i) resumed.train_step();
  EXPECT_EQ(param_values(ctx, resumed_lora.parameters()), param_values(ctx, lora.parameters()));

  // Another run's checkpoint is refused by name.
  const LoraAdapter other_lora = make_lora(ctx, run.weights, config);
  EsTrainer other(ctx, run.weights, other_lora.parameters(), &other_lora, run.examples, {},
                  {.es = {.population = 4, .sigma = 0.02, .lr = 0.02, .seed = 2}, .reward = Reward::parse("loss"),
                   .batch = 3},
                  tokenizer());
  const std::string message = testing::error_message([&] { other.load(ckpt); });
  EXPECT_NE(message.find("es.population"), std::string::npos) << message;
}

// The greedy continuation of an example's prompt, by a plain loop over the training forward.
std::vector<int32_t> greedy(ExecContext& ctx, const Qwen3Weights& w, std::vector<int32_t> tokens, size_t n) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < n; ++i) {
    const Array ids = Array::from_values<int32_t>(ctx, {1, int64_t(tokens.size())}, tokens);
    const std::vector<float> logits = to_vector<float>(ctx, qwen3_logits(ctx, w, ids).select(0, 0).select(0, ids.dim(1) - 1));
    const int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    tokens.push_back(next);
    out.push_back(next);
  }
  return out;
}

TEST(Rewards, exact_regex_and_loss_score_what_they_say) {
  ExecContext ctx;
  const Colors run;
  const Example& e = run.examples[0];
  size_t prompt = 1;
  while (!e.counted[prompt]) ++prompt;
  const size_t answer = e.tokens.size() - prompt;
  const std::vector<int32_t> continuation =
      greedy(ctx, run.weights, std::vector<int32_t>(e.tokens.begin(), e.tokens.begin() + ptrdiff_t(prompt)), answer);
  ASSERT_NE(continuation, std::vector<int32_t>(e.tokens.begin() + ptrdiff_t(prompt), e.tokens.end()))
      << "the untrained model already answers";

  // An example whose answer is the model's own greedy continuation scores 1; the real one 0.
  Example own = e;
  std::copy(continuation.begin(), continuation.end(), own.tokens.begin() + ptrdiff_t(prompt));
  const std::vector<const Example*> real{&e}, mine{&own};
  EXPECT_EQ(reward(ctx, run.weights, nullptr, mine, Reward::parse("exact"), tokenizer()), 1.0);
  EXPECT_EQ(reward(ctx, run.weights, nullptr, real, Reward::parse("exact"), tokenizer()), 0.0);

  // The continuation's text matches itself; a pattern it cannot contain does not.
  std::vector<int32_t> until_eos;
  for (int32_t t : continuation) {
    if (t == tokenizer().eos()) break;
    until_eos.push_back(t);
  }
  const std::string text = tokenizer().decode(until_eos);
  const std::string escaped = std::regex_replace(text, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
  const Reward matching = Reward::parse("regex:^" + escaped, int64_t(answer));
  EXPECT_EQ(reward(ctx, run.weights, nullptr, real, matching, tokenizer()), 1.0) << "'" << text << "'";
  EXPECT_EQ(reward(ctx, run.weights, nullptr, real, Reward::parse("regex:^" + escaped + "\\x00$", int64_t(answer)),
                   tokenizer()),
            0.0);

  // The loss reward is minus the trainer's eval loss.
  Finetuner t = run.tuner(ctx);
  std::vector<const Example*> all;
  for (const Example& x : run.examples) all.push_back(&x);
  Finetuner whole(ctx, run.weights, run.examples, run.examples,
                  {.lora = {.rank = 4, .targets = parse_targets("q")}, .lr = 1e-2, .batch = 2, .seed = 1});
  EXPECT_NEAR(reward(ctx, run.weights, &whole.adapter(), all, Reward::parse("loss"), tokenizer()), -whole.eval_loss(),
              1e-6);

  EXPECT_NE(testing::error_message([] { Reward::parse("precision"); }).find("precision"), std::string::npos);
  EXPECT_NE(testing::error_message([] { Reward::parse("regex:(unclosed"); }).find("(unclosed"), std::string::npos);
}

}  // namespace
}  // namespace tempra::train
