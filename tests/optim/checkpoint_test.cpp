// tests/optim/checkpoint_test.cpp: training checkpoints (src/tempra/optim/checkpoint.h).
//
// Proves, for every optimizer: N steps straight equal k steps + save + load into a freshly built
// model and optimizer + N - k steps, bitwise (params, state, scalars, RNG). Gradients are drawn
// from ctx.rng() each step, so the RNG position is part of what must round-trip, and the lr
// follows a warmup-cosine schedule, so the step count is too. Then: a corrupt, truncated or
// mismatched checkpoint throws an error naming the file and the field, and leaves the live
// parameters, optimizer state and RNG bit-identical to before. (The fresh-process form of the
// resume test is tests/apps' spirals tests.)
#include "tempra/optim/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/files.h"
#include "tempra/core/error.h"
#include "tempra/core/exec_context.h"
#include "tempra/io/safetensors.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/adamw.h"
#include "tempra/optim/apollo.h"
#include "tempra/optim/muon.h"
#include "tempra/optim/schedule.h"
#include "tempra/optim/sgd.h"

namespace tempra::optim {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return testing::scratch_dir("tempra_checkpoint_test") / name;
}

const std::vector<std::pair<std::string, Dims>> kShapes{
    {"fc1.weight", {6, 3}}, {"fc1.bias", {6}}, {"fc2.weight", {2, 6}}, {"fc2.bias", {2}}};

using Factory = std::function<std::unique_ptr<Optimizer>(const std::vector<Param>&)>;

std::vector<std::pair<std::string, Factory>> factories() {
  // Matrices (0, 2) and vectors (1, 3) in their own groups, as Muon and APOLLO want them.
  auto split = [](const std::vector<Param>& p) {
    return std::pair{std::vector<Param>{p[0], p[2]}, std::vector<Param>{p[1], p[3]}};
  };
  return {
      {"sgd_momentum",
       [](const std::vector<Param>& p) {
         return std::make_unique<Sgd>(p, 0.05, SgdOptions{0.9, 0.0, true}, 1e-3);
       }},
      {"adamw", [](const std::vector<Param>& p) { return std::make_unique<AdamW>(p, 1e-2); }},
      {"muon",
       [=](const std::vector<Param>& p) {
         auto [matrices, vectors] = split(p);
         MuonOptions adam;
         adam.use_muon = false;
         return std::make_unique<Muon>(
             std::vector<Group<MuonOptions>>{{matrices, 0.02, 0.0, {}}, {vectors, 3e-3, 0.0, adam}});
       }},
      {"apollo",
       [=](const std::vector<Param>& p) {
         auto [matrices, vectors] = split(p);
         ApolloOptions projected;
         projected.rank = 2;
         projected.update_proj_gap = 3;  // refreshes the projection across the save point
         projected.seed = 11;
         return std::make_unique<Apollo>(
             std::vector<Group<ApolloOptions>>{{matrices, 1e-2, 0.0, projected}, {vectors, 1e-2, 0.0, {}}});
       }},
  };
}

struct TrainingRun {
  std::vector<Param> params;
  std::unique_ptr<Optimizer> opt;
  LrSchedule schedule = LrSchedule::warmup_cosine(3, 12, 0.1);

  // Params initialized from ctx.rng(), so a run's init depends on the context's seed.
  TrainingRun(ExecContext& ctx, const Factory& factory) {
    for (const auto& [name, shape] : kShapes) {
      Array a = normal(ctx, shape, 0.0, 0.5);
      a.set_requires_grad();
      params.push_back({name, a});
    }
    opt = factory(params);
  }
  void steps(ExecContext& ctx, int64_t until) {
    while (opt->step_count() < until) {
      apply_schedule(*opt, schedule);
      for (Param& p : params) p.value.set_grad(normal(ctx, p.value.shape(), 0.0, 1.0));  // from ctx.rng()
      opt->step(ctx);
      opt->zero_grad();
    }
  }
};

// Every byte of the params and of the optimizer's state, and its scalars.
struct Snapshot {
  std::vector<std::vector<std::byte>> tensors;
  std::map<std::string, double> scalars;
  RngState rng;
  bool operator==(const Snapshot&) const = default;
};

std::vector<std::byte> bytes_of(const Array& a) {
  const auto* p = static_cast<const std::byte*>(a.raw_data());
  return {p, p + a.nbytes()};
}

Snapshot snapshot(ExecContext& ctx, const TrainingRun& run) {
  Snapshot s;
  for (const Param& p : run.params) s.tensors.push_back(bytes_of(p.value));
  for (const StateTensor& t : run.opt->state_tensors()) s.tensors.push_back(bytes_of(t.value));
  s.scalars = run.opt->scalar_state();
  s.rng = ctx.rng();
  return s;
}

TEST(Checkpoint, resume_is_bitwise_equal_to_a_straight_run_for_every_optimizer) {
  constexpr int64_t kTotal = 10, kSaveAt = 4;
  for (const auto& [name, factory] : factories()) {
    SCOPED_TRACE(name);
    ExecContext straight_ctx(ExecOptions{.seed = 7});
    TrainingRun straight(straight_ctx, factory);
    straight.steps(straight_ctx, kTotal);

    const fs::path path = temp_path(name + ".safetensors");
    {
      ExecContext ctx(ExecOptions{.seed = 7});
      TrainingRun first(ctx, factory);
      first.steps(ctx, kSaveAt);
      save_checkpoint(ctx, path, first.params, first.opt.get(), first.schedule, {{"note", "half way"}});
    }
    // A fresh model from another seed: everything that matters must come from the file.
    ExecContext ctx(ExecOptions{.seed = 99});
    TrainingRun resumed(ctx, factory);
    const CheckpointInfo info = load_checkpoint(ctx, path, resumed.params, resumed.opt.get());
    EXPECT_EQ(info.optimizer, resumed.opt->name());
    EXPECT_EQ(info.step, kSaveAt);
    EXPECT_EQ(info.schedule.kind, LrSchedule::Kind::warmup_cosine);
    EXPECT_EQ(info.schedule.total_steps, 12);
    EXPECT_EQ(info.user.at("note"), "half way");
    EXPECT_EQ(resumed.opt->step_count(), kSaveAt);
    resumed.steps(ctx, kTotal);

    EXPECT_TRUE(snapshot(straight_ctx, straight) == snapshot(ctx, resumed));
  }
}

TEST(Checkpoint, other_tools_see_the_parameters_under_their_own_names) {
  ExecContext ctx(ExecOptions{.seed = 1});
  TrainingRun run(ctx, factories()[1].second);
  run.steps(ctx, 2);
  const fs::path path = temp_path("names.safetensors");
  save_checkpoint(ctx, path, run.params, run.opt.get());
  const io::SafetensorsFile f = io::SafetensorsFile::open(path);
  for (const Param& p : run.params) {
    ASSERT_NE(f.find(p.name), nullptr) << p.name;
    EXPECT_EQ(bytes_of(f.tensor(p.name)), bytes_of(p.value));
  }
  EXPECT_NE(f.find("optimizer.adamw.exp_avg.fc1.weight"), nullptr);
  EXPECT_EQ(f.metadata().at("tempra.optimizer"), "adamw");
  EXPECT_EQ(f.metadata().at("tempra.step"), "2");
}

TEST(Checkpoint, parameters_only_load_ignores_the_optimizer_state) {
  ExecContext ctx(ExecOptions{.seed = 1});
  TrainingRun run(ctx, factories()[1].second);
  run.steps(ctx, 3);
  const fs::path path = temp_path("params_only.safetensors");
  save_checkpoint(ctx, path, run.params, run.opt.get());
  ExecContext other(ExecOptions{.seed = 2});
  TrainingRun fresh(other, factories()[1].second);
  load_checkpoint(other, path, fresh.params, nullptr);
  for (size_t i = 0; i < run.params.size(); ++i)
    EXPECT_EQ(bytes_of(fresh.params[i].value), bytes_of(run.params[i].value));
  EXPECT_EQ(fresh.opt->step_count(), 0);
}

// Loads `path` into a live run and expects an error containing `fragment`, with nothing changed.
void expect_rejected_untouched(const fs::path& path, const std::string& fragment, size_t factory = 1,
                               const std::vector<std::pair<std::string, Dims>>* shapes = nullptr) {
  ExecContext ctx(ExecOptions{.seed = 5});
  TrainingRun live(ctx, factories()[factory].second);
  if (shapes) {  // a model of another architecture
    live.params.clear();
    for (const auto& [name, shape] : *shapes) {
      Array a = normal(ctx, shape, 0.0, 0.5);
      a.set_requires_grad();
      live.params.push_back({name, a});
    }
    live.opt = factories()[factory].second(live.params);
  }
  live.steps(ctx, 2);  // non-trivial state to protect
  const Snapshot before = snapshot(ctx, live);
  try {
    load_checkpoint(ctx, path, live.params, live.opt.get());
    ADD_FAILURE() << "accepted " << path;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
  EXPECT_TRUE(before == snapshot(ctx, live)) << "the failed load changed the live model";
}

fs::path saved_adamw_checkpoint(const std::string& name) {
  ExecContext ctx(ExecOptions{.seed = 3});
  TrainingRun run(ctx, factories()[1].second);
  run.steps(ctx, 5);
  const fs::path path = temp_path(name);
  save_checkpoint(ctx, path, run.params, run.opt.get(), run.schedule);
  return path;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_all(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(Checkpoint, a_truncated_checkpoint_is_rejected_and_the_model_untouched) {
  const fs::path path = saved_adamw_checkpoint("truncated.safetensors");
  std::string bytes = read_all(path);
  bytes.resize(bytes.size() - 10);
  write_all(path, bytes);
  expect_rejected_untouched(path, "extend past the end of the file");
}

TEST(Checkpoint, a_corrupt_header_is_rejected_and_the_model_untouched) {
  const fs::path path = saved_adamw_checkpoint("corrupt.safetensors");
  std::string bytes = read_all(path);
  const size_t at = bytes.find("\"shape\":[6,3]");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 13, "\"shape\":[6,4]");  // same length: the byte span no longer matches
  write_all(path, bytes);
  expect_rejected_untouched(path, "shape [6, 4] of F32 needs 96 bytes, data_offsets span 72");
}

TEST(Checkpoint, corrupt_metadata_is_rejected_and_the_model_untouched) {
  const fs::path path = saved_adamw_checkpoint("metadata.safetensors");
  std::string bytes = read_all(path);
  const size_t at = bytes.find("\"tempra.rng.offset\":\"");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 21] = 'x';  // the first digit of the offset
  write_all(path, bytes);
  expect_rejected_untouched(path, "metadata 'tempra.rng.offset' = 'x");
}

TEST(Checkpoint, another_optimizer_kind_is_rejected_and_the_model_untouched) {
  const fs::path path = saved_adamw_checkpoint("kind.safetensors");
  expect_rejected_untouched(path, "holds the state of optimizer 'adamw', not of 'sgd'", 0);
}

TEST(Checkpoint, a_shape_mismatch_is_rejected_and_the_model_untouched) {
  const fs::path path = saved_adamw_checkpoint("shape.safetensors");
  const std::vector<std::pair<std::string, Dims>> wider{
      {"fc1.weight", {8, 3}}, {"fc1.bias", {8}}, {"fc2.weight", {2, 8}}, {"fc2.bias", {2}}};
  expect_rejected_untouched(path, "tensor 'fc1.weight' has shape [6, 3], parameter 'fc1.weight' has shape [8, 3]", 1,
                            &wider);
}

TEST(Checkpoint, a_missing_or_extra_parameter_is_rejected_and_the_model_untouched) {
  const fs::path path = saved_adamw_checkpoint("names.safetensors");
  const std::vector<std::pair<std::string, Dims>> renamed{
      {"fc1.weight", {6, 3}}, {"fc1.b", {6}}, {"fc2.weight", {2, 6}}, {"fc2.bias", {2}}};
  expect_rejected_untouched(path, "has no tensor 'fc1.b' for parameter 'fc1.b'", 1, &renamed);
  const std::vector<std::pair<std::string, Dims>> fewer{
      {"fc1.weight", {6, 3}}, {"fc1.bias", {6}}, {"fc2.weight", {2, 6}}};
  expect_rejected_untouched(path, "holds tensor 'fc2.bias', which is not a parameter of the model", 1, &fewer);
}

TEST(Checkpoint, a_file_that_is_not_a_checkpoint_is_rejected) {
  ExecContext ctx;
  const fs::path path = temp_path("plain.safetensors");
  const std::vector<io::NamedArray> tensors{{"fc1.weight", Array::zeros(ctx, {6, 3}, DType::f32)}};
  io::write_safetensors(path, tensors);
  expect_rejected_untouched(path, "metadata has no 'tempra.checkpoint'");
}

TEST(Checkpoint, save_rejects_duplicate_and_reserved_parameter_names) {
  ExecContext ctx;
  const Array a = Array::zeros(ctx, {2}, DType::f32);
  const std::vector<Param> dup{{"w", a}, {"w", a}};
  EXPECT_THROW(save_checkpoint(ctx, temp_path("dup.safetensors"), dup, nullptr), Error);
  const std::vector<Param> reserved{{"optimizer.x", a}};
  EXPECT_THROW(save_checkpoint(ctx, temp_path("reserved.safetensors"), reserved, nullptr), Error);
}

}  // namespace
}  // namespace tempra::optim
