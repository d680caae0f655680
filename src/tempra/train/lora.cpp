// tempra/train/lora.cpp: see lora.h.
#include "tempra/train/lora.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <string>
#include <cmath>

#include "tempra/core/error.h"
#include "tempra/core/rng.h"
#include "tempra/ops/ops.h"

namespace tempra::train {
namespace {

struct TargetNames {
  LoraTarget target;
  std::string_view name, tensor;
};
constexpr std::array<TargetNames, kLoraTargetCount> kTargets{{
    {LoraTarget::q, "q", "attn_q"},
    {LoraTarget::k, "k", "attn_k"},
    {LoraTarget::v, "v", "attn_v"},
    {LoraTarget::o, "o", "attn_output"},
    {LoraTarget::gate, "gate", "ffn_gate"},
    {LoraTarget::up, "up", "ffn_up"},
    {LoraTarget::down, "down", "ffn_down"},
}};

// The stream of adapter `index`: A's initial values and its dropout masks.
uint64_t adapter_stream(uint64_t seed, size_t index) { return splitmix64_mix(seed ^ (0x10a0ull + index)); }

}  // namespace

std::string_view target_name(LoraTarget t) { return kTargets[size_t(t)].name; }
std::string_view target_tensor(LoraTarget t) { return kTargets[size_t(t)].tensor; }

std::string adapted_tensor(int layer, LoraTarget t) {
  return "blk." + std::to_string(layer) + "." + std::string(target_tensor(t)) + ".weight";
}

std::vector<LoraTarget> parse_targets(std::string_view list) {
  std::vector<LoraTarget> out;
  if (list == "all") return {std::begin(kAllLoraTargets), std::end(kAllLoraTargets)};
  for (bool more = true; more;) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    more = comma != std::string_view::npos;
    if (name.empty()) fail("lora", "an empty target name in '", list, "'");
    const auto* found = std::find_if(kTargets.begin(), kTargets.end(), [&](const TargetNames& t) { return t.name == name; });
    if (found == kTargets.end())
      fail("lora", "unknown target '", name, "' (expected a list of q, k, v, o, gate, up, down, or all)");
    if (std::find(out.begin(), out.end(), found->target) != out.end()) fail("lora", "target '", name, "' is named twice");
    out.push_back(found->target);
    if (more) list = list.substr(comma + 1);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void LoraConfig::validate() const {
  check(rank >= 1 && rank <= (int64_t{1} << 16), "lora", "rank ", rank, " must be in [1, 65536]");
  check(alpha > 0 && std::isfinite(alpha), "lora", "alpha ", alpha, " must be positive");
  check(dropout >= 0 && dropout < 1, "lora", "dropout ", dropout, " must be in [0, 1)");
  check(!targets.empty(), "lora", "no target projections");
  for (size_t i = 0; i < targets.size(); ++i)
    for (size_t j = 0; j < i; ++j) check(targets[i] != targets[j], "lora", "target '", target_name(targets[i]), "' twice");
}

LoraAdapter::LoraAdapter(const LoraConfig& config, int n_layer)
    : config_(config), n_layer_(n_layer), slot_of_(size_t(std::max(n_layer, 0)) * kLoraTargetCount, -1) {}

void LoraAdapter::set(int layer, LoraTarget t, LoraPair pair) {
  check(layer >= 0 && layer < n_layer_, "lora", "layer ", layer, " is outside the adapter's ", n_layer_);
  check(pair.a.defined() && pair.b.defined() && pair.a.rank() == 2 && pair.b.rank() == 2 &&
            pair.a.dim(0) == config_.rank && pair.b.dim(1) == config_.rank,
        "lora", "layer ", layer, " '", target_name(t), "': A ", pair.a.defined() ? pair.a.shape() : Dims{}, " and B ",
        pair.b.defined() ? pair.b.shape() : Dims{}, " are not [rank, in] and [out, rank] of rank ", config_.rank);
  int& s = slot_of_[size_t(layer) * kLoraTargetCount + size_t(t)];
  if (s >= 0) {
    pairs_[size_t(s)] = std::move(pair);
    return;
  }
  s = int(pairs_.size());
  pairs_.push_back(std::move(pair));
}

LoraPair LoraAdapter::fresh_pair(ExecContext& ctx, int64_t out, int64_t in, DType dtype) const {
  const double bound = 1.0 / std::sqrt(double(in));
  LoraPair p{cast(ctx, uniform(ctx, {config_.rank, in}, -bound, bound, adapter_stream(config_.seed, pairs_.size())), dtype),
             Array::zeros(ctx, {out, config_.rank}, dtype)};
  p.a.set_requires_grad();
  p.b.set_requires_grad();
  return p;
}

int LoraAdapter::slot(int layer, LoraTarget t) const {
  if (layer < 0 || layer >= n_layer_) return -1;
  return slot_of_[size_t(layer) * kLoraTargetCount + size_t(t)];
}

LoraPair& LoraAdapter::pair(int layer, LoraTarget t) {
  const int s = slot(layer, t);
  check(s >= 0, "lora", "layer ", layer, " has no '", target_name(t), "' adapter");
  return pairs_[size_t(s)];
}

const LoraPair& LoraAdapter::pair(int layer, LoraTarget t) const { return const_cast<LoraAdapter*>(this)->pair(layer, t); }

std::vector<optim::Param> LoraAdapter::parameters() const {
  std::vector<optim::Param> out;
  for (int layer = 0; layer < n_layer_; ++layer)
    for (LoraTarget t : config_.targets) {
      if (!has(layer, t)) continue;
      const LoraPair& p = pair(layer, t);
      out.push_back({adapted_tensor(layer, t) + ".lora_a", p.a});
      out.push_back({adapted_tensor(layer, t) + ".lora_b", p.b});
    }
  return out;
}

Array LoraAdapter::project(ExecContext& ctx, const Array& x, const Array& w, int layer, LoraTarget t,
                           std::optional<uint64_t> train_step) const {
  return adapt(ctx, x, linear(ctx, x, w), layer, t, train_step);
}

Array LoraAdapter::adapt(ExecContext& ctx, const Array& x, const Array& y, int layer, LoraTarget t,
                         std::optional<uint64_t> train_step) const {
  const int s = slot(layer, t);
  if (s < 0) return y;
  const LoraPair& p = pairs_[size_t(s)];
  const Array xd = config_.dropout > 0 && train_step
                       ? dropout(ctx, x, config_.dropout, adapter_stream(config_.seed, size_t(s)), *train_step)
                       : x;
  return add(ctx, y, mul(ctx, linear(ctx, linear(ctx, xd, p.a), p.b), config_.scale()));
}

}  // namespace tempra::train
