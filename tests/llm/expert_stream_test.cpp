// Expert streaming (llm/model/expert_cache.h): a qwen3moe model whose routed experts are read
// from the file into a bounded cache gives the resident model's logits bit for bit, whatever
// the budget; the cache's LRU, pinning and usage file; the errors. The memory-limit case (a
// model larger than the address space allowed decodes) is at the end, labelled heavy.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <gtest/gtest.h>

#include "support/files.h"
#include "tempra/io/gguf_model.h"
#include "tempra/io/mapped_file.h"
#include "tempra/llm/model/expert_cache.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {
namespace {

// The test's folder, removed when the program ends (a forked child leaves by _exit, which skips it).
const std::filesystem::path& dir() {
  struct Folder {
    std::filesystem::path path = testing::scratch_dir("expert_stream_test");
    ~Folder() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Folder d;
  return d.path;
}

// The tiny qwen3moe (2 layers of 8 experts, 2 used) in `type`, written once per test program.
std::filesystem::path tiny_model(DType type) {
  const std::filesystem::path path = dir() / ("moe-" + std::string(type.name()) + ".gguf");
  if (!std::filesystem::exists(path)) {
    SynthSpec spec = SynthSpec::qwen3moe_tiny();
    spec.weight_type = type;
    spec.seed = 7;
    write_synthetic_model(path, spec);
  }
  return path;
}

LoadOptions streaming(uint64_t cache_bytes, std::filesystem::path usage = {}, bool prefetch = true) {
  return LoadOptions{.moe_stream = ExpertStreaming{.cache_bytes = cache_bytes, .usage_file = std::move(usage),
                                                   .prefetch = prefetch}};
}

// The logits of a 40-token prompt in one pass and then of 12 greedy decode steps, all rows.
std::vector<float> run(const Model& model) {
  ExecContext ctx({.threads = 2});
  KvCache cache = model.make_cache(ctx, 128, KvCacheType::f16);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(int32_t((i * 37 + 11) % model.info().n_vocab));
  Array logits = model.forward(ctx, prompt, cache);
  const int64_t V = model.info().n_vocab;
  std::vector<float> all(logits.data<float>(), logits.data<float>() + logits.numel());
  for (int step = 0; step < 12; ++step) {
    const float* last = all.data() + all.size() - size_t(V);
    const auto next = int32_t(std::max_element(last, last + V) - last);
    Array one = model.forward(ctx, std::span<const int32_t>(&next, 1), cache);
    all.insert(all.end(), one.data<float>(), one.data<float>() + one.numel());
  }
  return all;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ExpertStream, LogitsEqualTheResidentModelsBitForBitAtEveryBudget) {
  for (DType type : {DType::f32, DType::f16, DType::bf16}) {
    const std::filesystem::path path = tiny_model(type);
    const std::vector<float> resident = run(*load_model(path));
    const std::unique_ptr<Model> probe = load_model(path, streaming(uint64_t{1} << 40));
    const uint64_t one = probe->expert_cache()->expert_bytes(), all = probe->expert_cache()->total_bytes();
    for (uint64_t budget : {one, 3 * one, all / 2, all}) {
      for (bool prefetch : {true, false}) {
        const std::unique_ptr<Model> streamed = load_model(path, streaming(budget, {}, prefetch));
        EXPECT_TRUE(bitwise_equal(run(*streamed), resident))
            << type.name() << ", budget " << budget / one << " experts, prefetch " << prefetch;
        const ExpertCache::Stats s = streamed->expert_cache()->stats();
        EXPECT_EQ(s.slots, int64_t(budget / one));
        EXPECT_GT(s.misses, 0u);
        // A cache that holds every expert reads each at most once.
        if (budget == all) {
          EXPECT_LE(s.bytes_read, all);
        }
      }
    }
  }
}

// DeepSeek-V2's experts begin after its leading dense layer and sit beside shared experts: the
// cache's layers are its MoE layers, and streaming them changes no bit either.
TEST(ExpertStream, DeepSeek2StreamsItsRoutedExpertsBitForBit) {
  const std::filesystem::path path = dir() / "deepseek2.gguf";
  if (!std::filesystem::exists(path)) {
    SynthSpec spec = SynthSpec::deepseek2_tiny();
    spec.seed = 7;
    write_synthetic_model(path, spec);
  }
  const std::vector<float> resident = run(*load_model(path));
  const std::unique_ptr<Model> probe = load_model(path, streaming(uint64_t{1} << 40));
  const uint64_t one = probe->expert_cache()->expert_bytes();
  for (uint64_t budget : {one, 5 * one}) {
    const std::unique_ptr<Model> streamed = load_model(path, streaming(budget));
    EXPECT_TRUE(bitwise_equal(run(*streamed), resident)) << "budget " << budget / one << " experts";
    EXPECT_GT(streamed->expert_cache()->stats().misses, 0u);
  }
}

TEST(ExpertStream, ABatchOfTwoSequencesEqualsEachAlone) {
  const std::filesystem::path path = tiny_model(DType::f16);
  const std::unique_ptr<Model> model = load_model(path, streaming(2 * load_model(path, streaming(1 << 30))
                                                                          ->expert_cache()
                                                                          ->expert_bytes()));
  ExecContext ctx({.threads = 2});
  const std::vector<int32_t> a = {5, 17, 300, 42, 8, 9, 700}, b = {900, 1, 2, 3};
  KvCache ca = model->make_cache(ctx, 32, KvCacheType::f16), cb = model->make_cache(ctx, 32, KvCacheType::f16);
  const Array alone_a = model->forward(ctx, a, ca), alone_b = model->forward(ctx, b, cb);
  KvCache ba = model->make_cache(ctx, 32, KvCacheType::f16), bb = model->make_cache(ctx, 32, KvCacheType::f16);
  const std::vector<SequenceRows> batch = {{&ba, a, 1}, {&bb, b, 1}};
  auto buffers = model->make_buffers(ctx, int64_t(a.size() + b.size()), 2, 32);
  model->forward(ctx, batch, *buffers);
  const int64_t V = model->info().n_vocab;
  EXPECT_EQ(std::memcmp(buffers->logits_row(0).data(), alone_a.data<float>() + (int64_t(a.size()) - 1) * V,
                        size_t(V) * sizeof(float)),
            0);
  EXPECT_EQ(std::memcmp(buffers->logits_row(1).data(), alone_b.data<float>() + (int64_t(b.size()) - 1) * V,
                        size_t(V) * sizeof(float)),
            0);
}

TEST(ExpertStream, AFullCacheHitsOnTheSecondRunAndALruOfOneMissesEveryChange) {
  const std::filesystem::path path = tiny_model(DType::f16);
  const std::unique_ptr<Model> full = load_model(path, streaming(uint64_t{1} << 40));
  run(*full);
  const ExpertCache::Stats first = full->expert_cache()->stats();
  run(*full);
  const ExpertCache::Stats second = full->expert_cache()->stats();
  EXPECT_EQ(second.misses, first.misses) << "every expert was already in the cache";
  EXPECT_GT(second.hits, first.hits);
  EXPECT_EQ(first.bytes_read, first.misses * full->expert_cache()->expert_bytes());

  // One slot: consecutive gets of the same expert hit, any other misses. Each layer uses
  // several experts per batch, so a one-expert cache misses at least once per layer and step.
  const std::unique_ptr<Model> one = load_model(path, streaming(full->expert_cache()->expert_bytes()));
  run(*one);
  const ExpertCache::Stats s = one->expert_cache()->stats();
  EXPECT_GE(s.misses, 2u * 13u);
  EXPECT_EQ(s.slots, 1);
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(ExpertStream, UsageIsKeptAcrossRunsAndPinsTheMostUsedExperts) {
  const std::filesystem::path path = tiny_model(DType::f16);
  const std::filesystem::path usage = dir() / "usage" / "moe.json";
  std::filesystem::remove_all(usage.parent_path());
  const uint64_t one = load_model(path, streaming(1 << 30))->expert_cache()->expert_bytes();
  std::vector<std::vector<uint64_t>> first;
  {
    const std::unique_ptr<Model> m = load_model(path, streaming(4 * one, usage));
    EXPECT_EQ(m->expert_cache()->stats().pinned, 0);
    run(*m);
    first = m->expert_cache()->usage();
  }  // saved here
  ASSERT_TRUE(std::filesystem::exists(usage));
  {
    const std::unique_ptr<Model> m = load_model(path, streaming(4 * one, usage));
    EXPECT_TRUE(m->expert_cache()->usage_note().empty()) << m->expert_cache()->usage_note();
    EXPECT_EQ(m->expert_cache()->usage(), first);
    EXPECT_EQ(m->expert_cache()->stats().pinned, 2) << "half of the 4 slots";
    EXPECT_EQ(m->expert_cache()->stats().bytes_read, 2 * one) << "the pinned experts are read at load";
    const std::vector<float> pinned_run = run(*m);
    EXPECT_TRUE(bitwise_equal(pinned_run, run(*load_model(path))));
    for (size_t l = 0; l < first.size(); ++l)
      for (size_t e = 0; e < first[l].size(); ++e) EXPECT_EQ(m->expert_cache()->usage()[l][e], 2 * first[l][e]);
  }
  // A file that is not a usage file, or of another model, is ignored with a note and rewritten.
  for (const std::string bad : {"{not json", R"({"format":"tempra-expert-usage","version":1,"layers":3,"experts":8,"usage":[]})",
                                R"({"format":"other"})", R"({"format":"tempra-expert-usage","version":1,"layers":2,"experts":8,"usage":[[1],[2]]})"}) {
    std::ofstream(usage) << bad;
    {
      const std::unique_ptr<Model> m = load_model(path, streaming(4 * one, usage));
      EXPECT_NE(m->expert_cache()->usage_note(), "") << bad;
      EXPECT_NE(m->expert_cache()->usage_note().find(usage.string()), std::string::npos);
      EXPECT_EQ(m->expert_cache()->stats().pinned, 0);
    }
    EXPECT_NE(read_text(usage).find("tempra-expert-usage"), std::string::npos) << "rewritten after " << bad;
  }
}

TEST(ExpertStream, ErrorsNameWhatIsWrong) {
  const std::filesystem::path path = tiny_model(DType::f16);
  try {
    load_model(path, streaming(1000));
    ADD_FAILURE() << "a budget below one expert was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no expert"), std::string::npos) << e.what();
  }
  const std::filesystem::path dense = dir() / "dense.gguf";
  if (!std::filesystem::exists(dense)) {
    SynthSpec spec = SynthSpec::llama_tiny();
    spec.n_vocab = 1000;
    write_synthetic_model(dense, spec);
  }
  try {
    load_model(dense, streaming(1 << 30));
    ADD_FAILURE() << "streaming a dense model was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no routed experts"), std::string::npos) << e.what();
  }
}

// Tensors mapped one at a time hold the bytes the whole-file mapping holds (the address-space
// limit case at the end shows the experts are never mapped).
TEST(ExpertStream, PerTensorMappingGivesTheWholeFilesBytes) {
  const std::filesystem::path path = tiny_model(DType::bf16);
  const io::GgufModel whole = io::GgufModel::open(path);
  const io::GgufModel each = io::GgufModel::open(path, io::TensorMapping::per_tensor);
  ASSERT_EQ(whole.tensors().size(), each.tensors().size());
  for (const io::GgufModel::Location& at : whole.tensors()) {
    const std::string& name = whole.info(at).name;
    const Array a = whole.tensor(name), b = each.tensor(name);
    ASSERT_EQ(a.nbytes(), b.nbytes()) << name;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << name;
    const io::GgufModel::TensorSource src = each.tensor_source(name);
    std::vector<std::byte> read(src.nbytes);
    src.file->read(src.offset, read);
    EXPECT_EQ(std::memcmp(read.data(), a.raw_data(), read.size()), 0) << name;
  }
}

// The address space limited below the model's size: the resident load cannot map the file, the
// streaming one decodes, and its logits equal the resident run's (made before the limit).
// RLIMIT_AS counts reserved address space, which AddressSanitizer reserves terabytes of, so this
// case is built only without sanitizers (and labelled heavy: it writes a ~770 MiB model).
#ifndef TEMPRA_NO_RLIMIT_TEST
TEST(ExpertStreamHeavy, AModelLargerThanTheAddressSpaceDecodesAsTheResidentOne) {
  // 4 layers of 32 experts of 3 x 1024 x 1024 f16: 768 MiB of experts, a few MiB of the rest.
  SynthSpec spec = SynthSpec::qwen3moe_tiny();
  spec.n_layer = 4;
  spec.n_embd = 1024;
  spec.n_head = 8;
  spec.n_head_kv = 4;
  spec.head_dim = 128;
  spec.n_expert = 32;
  spec.n_expert_used = 4;
  spec.n_ff_exp = 1024;
  spec.n_ff = 4096;
  spec.seed = 11;
  const std::filesystem::path path = dir() / "moe-large.gguf";
  write_synthetic_model(path, spec);
  const uint64_t file_size = std::filesystem::file_size(path);
  const std::vector<float> resident = run(*load_model(path));

  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    // The limit: what the process has reserved now, plus half the file (room for the threads,
    // the buffers and a cache of a quarter of the experts), so the whole file cannot be mapped.
    std::ifstream status("/proc/self/status");
    std::string key;
    uint64_t vm_kib = 0;
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoull(line.substr(7));
    const rlimit limit{.rlim_cur = vm_kib * 1024 + file_size / 2, .rlim_max = vm_kib * 1024 + file_size / 2};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(10);
    int code = 0;
    try {
      load_model(path);
      code = 11;  // the resident load fit: the limit does not bind
    } catch (const Error& e) {
      if (std::string(e.what()).find("cannot map") == std::string::npos) code = 12;
    }
    if (code == 0) {
      try {
        const std::unique_ptr<Model> m = load_model(path, streaming(file_size / 4));
        const std::vector<float> streamed = run(*m);
        const size_t bytes = streamed.size() * sizeof(float);
        if (::write(pipe_fds[1], streamed.data(), bytes) != ssize_t(bytes)) code = 13;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "streamed run failed under the limit: %s\n", e.what());
        code = 14;
      }
    }
    ::close(pipe_fds[1]);
    ::_exit(code);
  }
  ::close(pipe_fds[1]);
  std::vector<float> streamed(resident.size() + 1);
  size_t got = 0;
  for (ssize_t n; (n = ::read(pipe_fds[0], reinterpret_cast<char*>(streamed.data()) + got,
                              streamed.size() * sizeof(float) - got)) > 0;)
    got += size_t(n);
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit failed, 11: the resident model loaded under the limit, "
                                       "12: it failed otherwise, 13: pipe, 14: the streamed run failed";
  ASSERT_EQ(got, resident.size() * sizeof(float));
  streamed.resize(resident.size());
  EXPECT_TRUE(bitwise_equal(streamed, resident));
  std::filesystem::remove(path);
}
#endif

}  // namespace
}  // namespace tempra::llm
