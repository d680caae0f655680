// apps/tempra/quantize.cpp: see quantize.h. The type choice follows llama-quant.cpp
// (tensor_allows_quantization, llama_tensor_get_type_impl, tensor_type_fallback) branch for
// branch, kept only where a supported file type can reach; the layout and metadata follow
// llama_model_quantize_impl.
#include "quantize.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "tempra/core/error.h"
#include "tempra/core/half.h"
#include "tempra/core/thread_pool.h"
#include "tempra/io/ggml_types.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/quant/formats.h"
#include "tempra/quant/reference.h"

namespace tempra::app {
namespace {

// enum ggml_type (ggml.h)
enum GgmlType : int32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
};
// enum llama_ftype (llama.h)
enum Ftype : int32_t {
  ALL_F32 = 0,
  MOSTLY_F16 = 1,
  MOSTLY_Q4_0 = 2,
  MOSTLY_Q4_1 = 3,
  MOSTLY_Q8_0 = 7,
  MOSTLY_Q5_0 = 8,
  MOSTLY_Q5_1 = 9,
  MOSTLY_Q2_K = 10,
  MOSTLY_Q3_K_S = 11,
  MOSTLY_Q3_K_M = 12,
  MOSTLY_Q3_K_L = 13,
  MOSTLY_Q4_K_S = 14,
  MOSTLY_Q4_K_M = 15,
  MOSTLY_Q5_K_S = 16,
  MOSTLY_Q5_K_M = 17,
  MOSTLY_Q6_K = 18,
  MOSTLY_IQ4_NL = 25,
  MOSTLY_IQ4_XS = 30,
  MOSTLY_BF16 = 32,
  MOSTLY_TQ1_0 = 36,
  MOSTLY_TQ2_0 = 37,
};
constexpr uint32_t kQuantizationVersion = 2;  // GGML_QNT_VERSION

constexpr FileType kFileTypes[] = {
    {"Q4_0", MOSTLY_Q4_0, Q4_0},       {"Q4_1", MOSTLY_Q4_1, Q4_1},     {"Q5_0", MOSTLY_Q5_0, Q5_0},
    {"Q5_1", MOSTLY_Q5_1, Q5_1},       {"Q8_0", MOSTLY_Q8_0, Q8_0},     {"Q2_K", MOSTLY_Q2_K, Q2_K},
    {"Q3_K_S", MOSTLY_Q3_K_S, Q3_K},   {"Q3_K_M", MOSTLY_Q3_K_M, Q3_K}, {"Q3_K_L", MOSTLY_Q3_K_L, Q3_K},
    {"Q4_K_S", MOSTLY_Q4_K_S, Q4_K},   {"Q4_K_M", MOSTLY_Q4_K_M, Q4_K}, {"Q5_K_S", MOSTLY_Q5_K_S, Q5_K},
    {"Q5_K_M", MOSTLY_Q5_K_M, Q5_K},   {"Q6_K", MOSTLY_Q6_K, Q6_K},     {"IQ4_NL", MOSTLY_IQ4_NL, IQ4_NL},
    {"IQ4_XS", MOSTLY_IQ4_XS, IQ4_XS}, {"TQ1_0", MOSTLY_TQ1_0, TQ1_0},  {"TQ2_0", MOSTLY_TQ2_0, TQ2_0},
    {"F16", MOSTLY_F16, F16},          {"BF16", MOSTLY_BF16, BF16},     {"F32", ALL_F32, F32},
};

int64_t block_size(int32_t type) {
  if (const quant::QuantFormat* f = quant::find_format_by_ggml_type(type)) return f->block_elems;
  return 1;
}
bool is_quantized(int32_t type) {
  return quant::find_format_by_ggml_type(type) != nullptr;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// ggml_n_dims: trailing extents of 1 do not count (at least 1).
uint32_t effective_dims(const io::GgufTensorInfo& t) {
  uint32_t n = io::kGgufMaxDims;
  while (n > 1 && t.ne[n - 1] == 1) --n;
  return n;
}

// llama-quant.cpp, tensor_allows_quantization (only_copy false, quantize_output_tensor true).
bool allows_quantization(const io::GgufTensorInfo& t) {
  if (effective_dims(t) < 2) return false;
  const std::string_view name = t.name;
  if (!name.ends_with("weight")) return false;
  if (name == "position_embd.weight" || name == "token_types.weight") return false;
  static constexpr std::string_view kNever[] = {"_norm.weight",
                                                "ffn_gate_inp.weight",
                                                "ffn_gate_tid2eid.weight",
                                                "altup",
                                                "laurel",
                                                "per_layer_model_proj",
                                                "ssm_conv1d",
                                                "shortconv.conv.weight",
                                                "indexer.k_proj.weight",
                                                "indexer.q_proj.weight",
                                                "time_mix_first.weight",
                                                "time_mix_w0.weight",
                                                "time_mix_w1.weight",
                                                "time_mix_w2.weight",
                                                "time_mix_v0.weight",
                                                "time_mix_v1.weight",
                                                "time_mix_v2.weight",
                                                "time_mix_a0.weight",
                                                "time_mix_a1.weight",
                                                "time_mix_a2.weight",
                                                "time_mix_g1.weight",
                                                "time_mix_g2.weight",
                                                "time_mix_decay_w1.weight",
                                                "time_mix_decay_w2.weight",
                                                "time_mix_lerp_fused.weight",
                                                "attn_rel_b.weight",
                                                ".position_embd",
                                                "sam.pos_embd",
                                                "sam.neck.",
                                                "sam.net_",
                                                ".rel_pos",
                                                ".patch_embd",
                                                ".patch_merger",
                                                "a.rvq.codebook",
                                                "mm.a.code_embd"};
  return std::none_of(std::begin(kNever), std::end(kNever), [&](std::string_view p) { return contains(name, p); });
}

enum class Role { output, token_embd, attn_v, attn_k, attn_q, attn_output, ffn_up, ffn_gate, ffn_down, other };

// llama-quant.cpp, tensor_get_category (attn_qkv and attn_kv_b count as attn_v, as there).
Role role_of(std::string_view name) {
  if (name == "output.weight") return Role::output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Role::token_embd;
  if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") || contains(name, "attn_v.weight"))
    return Role::attn_v;
  if (contains(name, "attn_k.weight")) return Role::attn_k;
  if (contains(name, "attn_q.weight")) return Role::attn_q;
  if (contains(name, "attn_output.weight")) return Role::attn_output;
  if (contains(name, "ffn_up")) return Role::ffn_up;
  if (contains(name, "ffn_gate")) return Role::ffn_gate;
  if (contains(name, "ffn_down")) return Role::ffn_down;
  return Role::other;
}

// The loader's weights_map order (llama_model_loader::weight_name_comparer): by the number
// after "blk." (-1 when there is none), then by name.
int layer_of(const std::string& name) {
  int layer = -1;
  std::sscanf(name.c_str(), "blk.%d.", &layer);
  return layer;
}

struct Hparams {
  int n_layer = 0;
  int n_gqa = 0;
  int n_expert = 0;  // 0 for dense models
};

int64_t metadata_integer(const io::GgufMetadata& m, const std::string& key, int64_t fallback) {
  const io::GgufValue* v = m.find(key);
  if (!v) return fallback;
  if (const auto n = io::integer_value(*v)) return *n;
  if (const auto* a = std::get_if<io::GgufArray>(&v->value)) {  // per-layer arrays: layer 0
    if (const auto* items = std::get_if<std::vector<int32_t>>(&a->items); items && !items->empty())
      return items->front();
    if (const auto* items = std::get_if<std::vector<uint32_t>>(&a->items); items && !items->empty())
      return items->front();
  }
  fail("quantize", "metadata '", key, "' is ", io::describe_type(*v), ", expected an integer");
}

Hparams read_hparams(const io::GgufMetadata& m) {
  const auto* arch_value = m.find("general.architecture");
  check(arch_value && arch_value->is<std::string>(), "quantize", "the input has no general.architecture string");
  const std::string arch = std::get<std::string>(arch_value->value);
  Hparams h;
  h.n_layer = static_cast<int>(metadata_integer(m, arch + ".block_count", 0));
  h.n_expert = static_cast<int>(metadata_integer(m, arch + ".expert_count", 0));
  check(arch != "falcon", "quantize", "falcon has its own quantization rules, which are not replicated");
  check(!(arch == "llama" && h.n_layer == 80), "quantize",
        "80-layer llama (70B) has its own attn_v rule, which is not replicated");
  const int64_t n_head = metadata_integer(m, arch + ".attention.head_count", 0);
  const int64_t n_head_kv = metadata_integer(m, arch + ".attention.head_count_kv", n_head);
  h.n_gqa = n_head_kv == 0 ? 0 : static_cast<int>(n_head / n_head_kv);
  return h;
}

// Mutable state of the type choice, as llama-quant.cpp's quantize_state_impl: counters advance
// in the loader's tensor order.
struct MixState {
  int n_attention_wv = 0;
  int i_attention_wv = 0;
  int n_ffn_down = 0;
  int i_ffn_down = 0;
  bool tied_embeddings = true;
};

bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

// The layer of an FFN tensor (layer_info): for ffn_down, its place among the ffn_down tensors in
// a dense model (`counted`); in a mixture of experts, where shared experts and leading dense
// layers add FFN tensors to some layers, the number in its name, which must be a layer's (for
// ffn_gate and ffn_up too, as llama.cpp checks them).
int ffn_layer(int counted, const Hparams& h, const std::string& name) {
  if (h.n_expert <= 1) return counted;
  const int layer = layer_of(name);
  check(layer >= 0 && layer < h.n_layer, "quantize", "tensor '", name, "' is not in a layer of [0, ", h.n_layer,
        ") (llama.cpp: \"Failed to determine layer\")");
  return layer;
}

// llama_tensor_get_type_impl for the supported file types of a non-falcon model: the mixes'
// rules by role and layer, and for mixtures of exactly 8 experts (Mixtral's shape) llama.cpp's
// extra bits for attn_v, attn_k and attn_output.
int32_t mix_type(MixState& s, const Hparams& h, int32_t type, const io::GgufTensorInfo& t, int32_t ft, Role role) {
  const bool eight_experts = h.n_expert == 8;
  if (role == Role::output || (s.tied_embeddings && role == Role::token_embd)) {
    if (t.ne[0] % block_size(type) != 0) return Q8_0;
    return type != Q8_0 ? Q6_K : type;
  }
  if (role == Role::token_embd) return ft == MOSTLY_TQ1_0 || ft == MOSTLY_TQ2_0 ? Q4_K : type;
  if (role == Role::attn_v) {
    if (ft == MOSTLY_Q2_K)
      type = h.n_gqa >= 4 ? Q4_K : Q3_K;
    else if (ft == MOSTLY_Q3_K_M)
      type = s.i_attention_wv < 2 ? Q5_K : Q4_K;
    else if (ft == MOSTLY_Q3_K_L)
      type = Q5_K;
    else if ((ft == MOSTLY_IQ4_NL || ft == MOSTLY_IQ4_XS) && h.n_gqa >= 4)
      type = Q5_K;
    else if ((ft == MOSTLY_Q4_K_M || ft == MOSTLY_Q5_K_M) && use_more_bits(s.i_attention_wv, s.n_attention_wv))
      type = Q6_K;
    else if (ft == MOSTLY_Q4_K_S && s.i_attention_wv < 4)
      type = Q5_K;
    if (eight_experts) type = Q8_0;  // "trades just ~128MB"
    ++s.i_attention_wv;
    return type;
  }
  if (role == Role::attn_k) return eight_experts ? Q8_0 : type;
  if (role == Role::ffn_gate || role == Role::ffn_up) {
    ffn_layer(0, h, t.name);  // the supported mixes keep their type; only the name is checked
    return type;
  }
  if (role == Role::ffn_down) {
    const int i = ffn_layer(s.i_ffn_down, h, t.name), n = s.n_ffn_down;
    if (ft == MOSTLY_Q2_K)
      type = Q3_K;
    else if (ft == MOSTLY_Q3_K_M)
      type = i < n / 16 ? Q5_K : Q4_K;
    else if (ft == MOSTLY_Q3_K_L)
      type = Q5_K;
    else if (ft == MOSTLY_Q4_K_M) {
      if (use_more_bits(i, n)) type = Q6_K;
    } else if (i < n / 8 && (ft == MOSTLY_IQ4_NL || ft == MOSTLY_IQ4_XS))
      type = Q5_K;
    else if (ft == MOSTLY_Q5_K_M && use_more_bits(i, n))
      type = Q6_K;
    else if (ft == MOSTLY_Q4_K_S && i < n / 8)
      type = Q5_K;
    ++s.i_ffn_down;
    return type;
  }
  if (role == Role::attn_output && eight_experts) {
    const bool bumped = ft == MOSTLY_Q2_K || ft == MOSTLY_Q3_K_S || ft == MOSTLY_Q3_K_M || ft == MOSTLY_IQ4_NL ||
                        ft == MOSTLY_Q4_K_S || ft == MOSTLY_Q4_K_M || ft == MOSTLY_IQ4_XS;
    return bumped ? Q5_K : type;
  }
  if (role == Role::attn_output) {
    if (ft == MOSTLY_Q2_K) return Q3_K;
    if (ft == MOSTLY_Q3_K_M) return Q4_K;
    if (ft == MOSTLY_Q3_K_L) return Q5_K;
  }
  return type;
}

// tensor_type_fallback: a type whose block does not divide the row length.
int32_t fallback_type(const io::GgufTensorInfo& t, int32_t type, bool& fell_back) {
  const int64_t cols = t.ne[0];
  if (cols % block_size(type) == 0) return type;
  fell_back = true;
  int32_t to = type;
  switch (type) {
    case IQ4_XS:
      to = IQ4_NL;
      break;
    case Q2_K:
    case Q3_K:
    case TQ1_0:
    case TQ2_0:
      to = Q4_0;
      break;
    case Q4_K:
      to = Q5_0;
      break;
    case Q5_K:
      to = Q5_1;
      break;
    case Q6_K:
      to = Q8_0;
      break;
    default:
      check(block_size(type) <= 32, "quantize", "no fallback type for ", io::ggml_type_name(type), " (tensor '", t.name,
            "', row length ", cols, ")");
  }
  return cols % block_size(to) == 0 ? to : F16;
}

void to_f32(int32_t type, const std::byte* src, float* dst, int64_t n) {
  if (type == F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    dst[i] = type == F16 ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits);
  }
}

// ggml_quantize_chunk without an importance matrix: the reference encoders (for IQ4_NL ggml's
// quantize_iq4_nl, whose scale search the _ref encoder skips), f16/bf16 rounding to nearest
// even, f32 as is.
void encode_row(int32_t type, const float* in, std::byte* out, int64_t n) {
  if (type == F32) {
    std::memcpy(out, in, static_cast<size_t>(n) * sizeof(float));
  } else if (type == F16 || type == BF16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t bits = type == F16 ? f32_to_f16_bits(in[i]) : f32_to_bf16_bits(in[i]);
      std::memcpy(out + 2 * i, &bits, 2);
    }
  } else if (type == IQ4_NL) {
    quant::quantize_iq4_nl(in, reinterpret_cast<quant::BlockIQ4_NL*>(out), n);  // not the _ref search
  } else {
    quant::find_format_by_ggml_type(type)->quantize_row(in, out, n);
  }
}

uint64_t row_bytes(int32_t type, int64_t n) {
  if (type == F32) return 4 * n;
  if (type == F16 || type == BF16) return 2 * n;
  const quant::QuantFormat* f = quant::find_format_by_ggml_type(type);
  return static_cast<uint64_t>(n / f->block_elems) * f->block_bytes;
}

bool can_encode(int32_t type) {
  if (type == F32 || type == F16 || type == BF16) return true;
  const quant::QuantFormat* f = quant::find_format_by_ggml_type(type);
  return f && f->quantize_row;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::span<const FileType> file_types() {
  return kFileTypes;
}

const FileType* find_file_type(std::string_view name) {
  std::string want = upper(name);
  if (want == "Q3_K" || want == "Q4_K" || want == "Q5_K") want += "_M";
  for (const FileType& t : kFileTypes)
    if (t.name == want) return &t;
  return nullptr;
}

std::string file_type_names() {
  std::string out;
  for (const FileType& t : kFileTypes) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

std::vector<TensorPlan> plan_quantization(const io::GgufModel& model, const FileType& type, bool pure) {
  const Hparams h = read_hparams(model.metadata());
  std::vector<TensorPlan> plan;
  for (const auto& at : model.tensors()) plan.push_back({at, model.info(at).name, model.info(at).ggml_type});
  std::stable_sort(plan.begin(), plan.end(), [](const TensorPlan& a, const TensorPlan& b) {
    const int la = layer_of(a.name), lb = layer_of(b.name);
    return la != lb ? la < lb : a.name < b.name;
  });

  MixState s;
  s.n_ffn_down = h.n_layer;
  for (const TensorPlan& p : plan) {
    const Role role = role_of(p.name);
    if (role == Role::attn_v) ++s.n_attention_wv;
    if (role == Role::output) s.tied_embeddings = false;
  }
  for (TensorPlan& p : plan) {
    const io::GgufTensorInfo& t = model.info(p.source);
    p.to_type = p.from_type;
    if (!allows_quantization(t)) continue;
    int32_t to = type.default_type;
    if (is_quantized(to)) {
      if (!pure) to = mix_type(s, h, to, t, type.ftype, role_of(p.name));
      to = fallback_type(t, to, p.fallback);
    }
    p.to_type = to;
  }
  return plan;
}

QuantizeSummary quantize_model(const std::filesystem::path& input, const std::filesystem::path& output,
                               const FileType& type, const QuantizeOptions& options) {
  const io::GgufModel model = io::GgufModel::open(input);
  const std::vector<TensorPlan> plan = plan_quantization(model, type, options.pure);

  io::GgufWriter writer;
  for (const auto& [key, value] : model.metadata().entries()) {
    if (key == "general.quantization_version" || key == "general.file_type" || key == "split.no" ||
        key == "split.count" || key == "split.tensors.count")
      continue;
    writer.metadata().add(key, value);
  }
  writer.metadata().add("general.quantization_version", {kQuantizationVersion});
  writer.metadata().add("general.file_type", {static_cast<uint32_t>(type.ftype)});

  ThreadPool pool(options.threads > 0 ? options.threads : ThreadPool::default_thread_count());
  QuantizeSummary summary;
  summary.tensors = plan.size();
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorPlan& p = plan[i];
    if (options.on_tensor) options.on_tensor(i, plan.size(), p);
    const io::GgufFile& shard = model.shards()[p.source.shard];
    const io::GgufTensorInfo& t = shard.tensors()[p.source.index];
    const std::span<const std::byte> src = shard.tensor_bytes(p.source.index);
    const std::span<const int64_t> ne(t.ne.data(), effective_dims(t));
    summary.bytes_in += src.size();
    summary.fallbacks += p.fallback;
    if (p.to_type == p.from_type) {
      writer.add_tensor(p.name, p.to_type, ne, src, nullptr);  // the model's mapping outlives write()
      summary.bytes_out += src.size();
      continue;
    }
    check(!is_quantized(p.from_type), "quantize", "tensor '", p.name, "' is ", io::ggml_type_name(p.from_type),
          ": requantizing to ", io::ggml_type_name(p.to_type), " is not supported (llama.cpp refuses it too)");
    check(p.from_type == F32 || p.from_type == F16 || p.from_type == BF16, "quantize", "tensor '", p.name, "' is ",
          io::ggml_type_name(p.from_type), ", which cannot be converted to ", io::ggml_type_name(p.to_type));
    check(can_encode(p.to_type), "quantize", "no encoder for ", io::ggml_type_name(p.to_type), " (tensor '", p.name,
          "')");
    const int64_t n_per_row = t.ne[0];
    const int64_t rows = n_per_row == 0 ? 0 : t.numel() / n_per_row;
    const uint64_t src_row = src.size() / static_cast<uint64_t>(std::max<int64_t>(rows, 1));
    const uint64_t dst_row = row_bytes(p.to_type, n_per_row);
    auto out = std::make_shared<std::vector<std::byte>>(dst_row * static_cast<uint64_t>(rows));
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n_per_row, 1));
    pool.parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(n_per_row));
      for (int64_t r = begin; r < end; ++r) {
        to_f32(p.from_type, src.data() + r * src_row, row.data(), n_per_row);
        encode_row(p.to_type, row.data(), out->data() + r * dst_row, n_per_row);
      }
    });
    summary.bytes_out += out->size();
    ++summary.converted;
    writer.add_tensor(p.name, p.to_type, ne, *out, out);
  }
  writer.write(output);
  return summary;
}

int run_quantize(const cli::Args& args) {
  const std::string& type_name = args.positional("type");
  const FileType* type = find_file_type(type_name);
  if (!type) fail("quantize", "unknown type '", type_name, "'; expected one of ", file_type_names());
  const int64_t threads = args.integer("--threads");
  if (threads < 0) throw cli::UsageError("-t/--threads must be >= 0, got " + std::to_string(threads));

  QuantizeOptions options;
  options.pure = args.flag("--pure");
  options.threads = static_cast<int>(threads);
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (tty || args.flag("--progress")) {
    options.on_tensor = [tty](size_t i, size_t n, const TensorPlan& p) {
      constexpr size_t kBarWidth = 24;
      const size_t filled = n ? (i + 1) * kBarWidth / n : kBarWidth;
      // Streamed, not concatenated: g++ 12 warns (-Wrestrict, a false positive) on the '+' chain.
      std::ostringstream line;
      line << '[' << std::string(filled, '#') << std::string(kBarWidth - filled, '.') << "] " << i + 1 << '/' << n
           << ' ' << p.name << ' ' << io::ggml_type_name(p.from_type) << " -> " << io::ggml_type_name(p.to_type);
      if (tty)
        std::cerr << "\r\033[K" << line.str() << (i + 1 == n ? "\n" : "") << std::flush;
      else
        std::cerr << line.str() << "\n";
    };
  }
  const std::string& in = args.positional("input");
  const std::string& out = args.positional("output");
  const QuantizeSummary s = quantize_model(in, out, *type, options);
  constexpr double kMiB = 1024.0 * 1024.0;
  std::printf("%s: %zu tensors, %zu converted to %s%s; %.2f MiB -> %.2f MiB\n", out.c_str(), s.tensors, s.converted,
              std::string(type->name).c_str(),
              s.fallbacks ? (" (" + std::to_string(s.fallbacks) + " fell back to another type)").c_str() : "",
              s.bytes_in / kMiB, s.bytes_out / kMiB);
  return 0;
}

}  // namespace tempra::app
