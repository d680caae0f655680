// tempra/optim/checkpoint.h: training checkpoints in one safetensors file.
//
// Contract:
// - save_checkpoint writes the parameters, the optimizer's state (optimizer.h: state_tensors()
//   and scalar_state()), the lr schedule, the context's RNG position (core/rng.h: RngState) and
//   the caller's own metadata into one safetensors file (io/safetensors.h), written atomically
//   (temporary file, rename). Parameters are stored under their own names, so any safetensors
//   tool (`safetensors.torch.load_file`) reads them as a plain state dict; optimizer buffers go
//   under "optimizer.<state name>" (e.g. "optimizer.adamw.exp_avg.fc1.weight"). Everything else
//   is `__metadata__` strings:
//     tempra.checkpoint = "1"             the format version
//     tempra.optimizer  = "adamw" | ...   or "none" for a parameters-only file
//     tempra.step, tempra.rng.seed, tempra.rng.offset            decimal integers
//     tempra.schedule = "constant" | "warmup_cosine", tempra.schedule.{warmup_steps,
//       total_steps, min_lr_ratio}
//     tempra.state.<key>                   each optimizer scalar, as the shortest decimal that
//                                          round-trips (std::to_chars), so restore is exact
//     user.<key>                           the caller's metadata
// - load_checkpoint validates the whole file against the live model and optimizer BEFORE it
//   changes anything: the format version, the optimizer's kind, every parameter's and state
//   buffer's presence, dtype and shape, every scalar (present, parseable, no unknown keys), and
//   that the file holds no tensor the model does not have. Any mismatch or corruption throws
//   tempra::Error naming the file and what differs, and leaves the parameters, the optimizer and
//   the context's RNG exactly as they were. Only then does it copy the bytes in place (params
//   and state keep their storage: a model holding them sees the new values) and set ctx.rng().
// - Resume is bit-exact: the update rules are deterministic (optimizer.h), the schedule is a
//   function of the optimizer's step, data order drawn from ctx.rng() continues from the saved
//   position, and every value round-trips bitwise. tests/optim/checkpoint_test.cpp and the
//   fresh-process tests of apps/spirals (tests/apps) hold it for every optimizer.
// - With optimizer == nullptr, save writes parameters only and load restores parameters only
//   (the optimizer buffers of a training checkpoint are then ignored: inference from it).
#pragma once

#include <filesystem>
#include <map>
#include <span>
#include <string>

#include "tempra/core/exec_context.h"
#include "tempra/core/rng.h"
#include "tempra/optim/optimizer.h"
#include "tempra/optim/schedule.h"

namespace tempra::optim {

// What a checkpoint holds besides tensors, as load_checkpoint found it.
struct CheckpointInfo {
  std::string optimizer;  // "none" for a parameters-only file
  int64_t step = 0;
  LrSchedule schedule;
  RngState rng;
  std::map<std::string, std::string> user;  // the caller's metadata, without the "user." prefix
};

void save_checkpoint(ExecContext& ctx, const std::filesystem::path& path, std::span<const Param> params,
                     const Optimizer* optimizer, const LrSchedule& schedule = LrSchedule::constant(),
                     const std::map<std::string, std::string>& user = {});

// Restores params (by name), the optimizer's state and ctx.rng(); see the header comment.
CheckpointInfo load_checkpoint(ExecContext& ctx, const std::filesystem::path& path, std::span<const Param> params,
                               Optimizer* optimizer);

// The optimizer's params in group order (what a model trained by one optimizer checkpoints).
std::vector<Param> optimizer_params(const Optimizer& optimizer);

}  // namespace tempra::optim
