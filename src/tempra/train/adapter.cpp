// tempra/train/adapter.cpp: see adapter.h.
#include "tempra/train/adapter.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "tempra/core/error.h"
#include "tempra/core/grad_node.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/ops/ops.h"

namespace tempra::train {
namespace {

// "blk.N.<stem>.weight.lora_a" -> (N, target, is_b); nullopt for any other name.
struct PairName {
  int layer;
  LoraTarget target;
  bool is_b;
};
std::optional<PairName> parse_pair_name(std::string_view name) {
  bool is_b = false;
  if (name.ends_with(".weight.lora_a")) {
    name.remove_suffix(std::string_view(".weight.lora_a").size());
  } else if (name.ends_with(".weight.lora_b")) {
    name.remove_suffix(std::string_view(".weight.lora_b").size());
    is_b = true;
  } else {
    return std::nullopt;
  }
  if (!name.starts_with("blk.")) return std::nullopt;
  name.remove_prefix(4);
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 4) return std::nullopt;
  int layer = 0;
  for (char ch : name.substr(0, dot)) {
    if (ch < '0' || ch > '9') return std::nullopt;
    layer = layer * 10 + (ch - '0');
  }
  const std::string_view stem = name.substr(dot + 1);
  for (LoraTarget t : kAllLoraTargets)
    if (target_tensor(t) == stem) return PairName{layer, t, is_b};
  return std::nullopt;
}

}  // namespace

void write_lora_gguf(const std::filesystem::path& path, const LoraAdapter& adapter, const std::string& architecture) {
  ExecContext ctx;
  io::GgufWriter w;
  w.metadata().add("general.architecture", {architecture});
  w.metadata().add("general.type", {std::string("adapter")});
  w.metadata().add("adapter.type", {std::string("lora")});
  w.metadata().add("adapter.lora.alpha", {float(adapter.config().alpha)});
  for (const optim::Param& p : adapter.parameters()) {
    NoGradGuard no_grad;
    w.add_tensor(p.name, contiguous(ctx, cast(ctx, p.value.detach(), DType::f32)));
  }
  w.write(path);
}

LoraAdapter read_lora_gguf(ExecContext& ctx, const std::filesystem::path& path, const io::GgufModel& base) {
  const std::string file = path.string();
  const auto bad = [&](const auto&... parts) -> void { fail("lora", file, ": ", parts...); };
  const io::GgufFile f = io::GgufFile::open(path);
  const io::GgufMetadata& meta = f.metadata();
  const auto string_key = [&](const char* key) {
    const auto* v = meta.find(key);
    if (v == nullptr || !v->is<std::string>()) bad("'", key, "' is missing or not a string");
    return std::get<std::string>(v->value);
  };
  if (string_key("general.type") != "adapter") bad("general.type is '", string_key("general.type"), "', not 'adapter'");
  if (string_key("adapter.type") != "lora") bad("adapter.type is '", string_key("adapter.type"), "', not 'lora'");
  const std::string arch = base.metadata().get<std::string>("general.architecture");
  if (string_key("general.architecture") != arch)
    bad("the adapter is for '", string_key("general.architecture"), "', the model is '", arch, "'");
  double alpha = 0;
  if (const auto* v = meta.find("adapter.lora.alpha")) {
    if (v->is<float>()) alpha = std::get<float>(v->value);
    else if (v->is<double>()) alpha = std::get<double>(v->value);
    else bad("adapter.lora.alpha is not a float");
  }
  const io::GgufValue* block_count = base.metadata().find(arch + ".block_count");
  const std::optional<int64_t> layers = block_count ? io::integer_value(*block_count) : std::nullopt;
  if (!layers || *layers < 1 || *layers > 4096)
    bad("the model it adapts has no valid ", arch, ".block_count");
  const int n_layer = int(*layers);

  // Every tensor must be half of a pair over a weight the base has, of that weight's shape.
  std::map<std::pair<int, LoraTarget>, LoraPair> pairs;
  int64_t rank = 0;
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const io::GgufTensorInfo& t = f.tensors()[i];
    const std::optional<PairName> name = parse_pair_name(t.name);
    if (!name) bad("tensor '", t.name, "' is not the lora_a or lora_b of a layer's q, k, v, o, gate, up or down weight");
    if (t.dtype != DType::f32 && t.dtype != DType::f16 && t.dtype != DType::bf16)
      bad("tensor '", t.name, "' is ", t.dtype.name(), " (f32, f16 or bf16 expected)");
    const io::GgufTensorInfo* w = base.find_tensor(adapted_tensor(name->layer, name->target));
    if (w == nullptr) bad("tensor '", t.name, "' adapts '", adapted_tensor(name->layer, name->target), "', which the model lacks");
    const Dims shape = t.shape(), ws = w->shape();
    const int64_t r = shape.size() == 2 ? shape[name->is_b ? 1 : 0] : 0;
    const bool fits = shape.size() == 2 && ws.size() == 2 && (name->is_b ? shape[0] == ws[0] : shape[1] == ws[1]);
    if (!fits || r < 1) bad("tensor '", t.name, "' is ", shape, ", which does not fit the model's ", ws);
    if (rank == 0) rank = r;
    if (r != rank) bad("tensor '", t.name, "' has rank ", r, ", others ", rank);
    LoraPair& p = pairs[{name->layer, name->target}];
    Array& slot = name->is_b ? p.b : p.a;
    if (slot.defined()) bad("tensor '", t.name, "' appears twice");
    slot = contiguous(ctx, cast(ctx, f.tensor(i), DType::f32));
  }
  if (pairs.empty()) bad("the file holds no adapter tensors");
  std::vector<LoraTarget> targets;
  for (const auto& [key, p] : pairs) {
    if (!p.a.defined() || !p.b.defined())
      bad("the pair of '", adapted_tensor(key.first, key.second), "' lacks its lora_", p.a.defined() ? "b" : "a");
    if (std::find(targets.begin(), targets.end(), key.second) == targets.end()) targets.push_back(key.second);
  }
  std::sort(targets.begin(), targets.end());
  // llama.cpp: alpha 0 means a scale of 1.
  LoraConfig config{.rank = rank, .alpha = alpha == 0 ? double(rank) : alpha, .targets = targets};
  try {
    config.validate();
  } catch (const Error& e) {
    bad(e.what());
  }
  LoraAdapter adapter(config, n_layer);
  for (auto& [key, p] : pairs) {
    p.a.set_requires_grad();
    p.b.set_requires_grad();
    adapter.set(key.first, key.second, std::move(p));
  }
  return adapter;
}

Array merged_weight(ExecContext& ctx, const Array& w, const LoraPair& pair, double scale) {
  NoGradGuard no_grad;
  const Array base = w.dtype().is_block_quantized() ? dequantize(ctx, w) : cast(ctx, w, DType::f32);
  const Array delta = matmul(ctx, cast(ctx, pair.b.detach(), DType::f32), cast(ctx, pair.a.detach(), DType::f32));
  return add(ctx, base, mul(ctx, delta, scale));
}

void merge_lora(ExecContext& ctx, io::GgufModel& base, const LoraAdapter& adapter) {
  std::vector<std::pair<std::string, Array>> merged;  // all computed before any is replaced
  for (int layer = 0; layer < adapter.n_layer(); ++layer)
    for (LoraTarget t : adapter.config().targets) {
      if (!adapter.has(layer, t)) continue;
      const std::string name = adapted_tensor(layer, t);
      merged.emplace_back(name, merged_weight(ctx, base.tensor(name), adapter.pair(layer, t), adapter.config().scale()));
    }
  for (auto& [name, w] : merged) base.replace_tensor(name, std::move(w));
}

}  // namespace tempra::train
