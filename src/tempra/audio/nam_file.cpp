// tempra/audio/nam_file.cpp
#include "tempra/audio/nam_file.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tempra/audio/amp_model.h"
#include "tempra/core/error.h"
#include "tempra/io/atomic_write.h"

namespace tempra::audio {
namespace {

// Ordered, so that a file's metadata keeps its key order when written again.
using Json = nlohmann::ordered_json;
constexpr const char* kOp = "nam";

// Bounds that keep a model's buffers small whatever a file says (NAM's stock models are far
// inside them: 16 channels, kernel 3, dilations up to 512, 24 LSTM units).
constexpr int kMaxChannels = 1024;
constexpr int kMaxKernel = 64;
constexpr int kMaxDilation = 1 << 16;
constexpr int kMaxLayers = 256;
constexpr int kMaxLayerArrays = 16;
constexpr int kMaxLstmLayers = 64;
constexpr int kMaxHidden = 4096;
// What a WaveNet's buffers may take (its histories: d (K - 1) rows per layer plus room for two
// maximum blocks, channels padded to 16 lanes). Dilations cost no weights, so without this a few
// kilobytes of JSON could ask for terabytes; NAM's standard model takes ~11 MiB.
constexpr double kMaxHistoryBytes = double(1 << 30);
// Samples of input one output may depend on (NAM's standard: 4093; this is 5.5 s at 48 kHz).
constexpr int64_t kMaxReceptiveField = int64_t(1) << 18;
// Multiply-adds a reset may take (prewarm samples x weights): a reset must not hang for hours on
// a file that asks for a half-second prewarm of a huge LSTM at a huge rate. NAM's standard
// WaveNet takes 5.6e7, its standard LSTM 6e7.
constexpr double kMaxPrewarmWork = double(int64_t(1) << 36);
// JSON nesting deeper than this is refused while parsing (printing a value recurses).
constexpr int kMaxDepth = 64;

constexpr std::array<std::pair<Activation, const char*>, 8> kActivations{{
    {Activation::tanh, "Tanh"},
    {Activation::fast_tanh, "Fasttanh"},
    {Activation::hard_tanh, "Hardtanh"},
    {Activation::relu, "ReLU"},
    {Activation::leaky_relu, "LeakyReLU"},
    {Activation::sigmoid, "Sigmoid"},
    {Activation::silu, "SiLU"},
    {Activation::hardswish, "Hardswish"},
}};

// The reader of one file: every error begins with the file's name and the field's path.
class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  template <class... Parts>
  [[noreturn]] void fail_at(const std::string& field, const Parts&... parts) const {
    fail(kOp, origin_, ": ", field, ": ", parts...);
  }

  const Json& member(const Json& object, const std::string& path, const char* key) const {
    const auto it = object.find(key);
    if (it == object.end()) fail_at(path.empty() ? key : path + "." + key, "missing");
    return *it;
  }

  int integer(const Json& value, const std::string& field, int lo, int hi) const {
    if (!value.is_number_integer()) fail_at(field, "expected an integer, got ", value.dump());
    const auto v = value.get<int64_t>();
    if (v < lo || v > hi) fail_at(field, "expected an integer in ", lo, " ... ", hi, ", got ", v);
    return static_cast<int>(v);
  }

  bool boolean(const Json& value, const std::string& field) const {
    if (!value.is_boolean()) fail_at(field, "expected true or false, got ", value.dump());
    return value.get<bool>();
  }

  std::optional<double> optional_number(const Json& object, const std::string& path, const char* key) const {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) fail_at(path + key, "expected a number, got ", it->dump());
    return it->get<double>();
  }

  Activation activation(const Json& value, const std::string& field) const {
    if (!value.is_string())
      fail_at(field, "expected an activation name, got ", value.dump(),
              " (parameterized activations are not supported)");
    const auto name = value.get<std::string>();
    for (const auto& [activation, spelled] : kActivations)
      if (name == spelled) return activation;
    fail_at(field, "unknown activation '", name,
            "' (supported: Tanh, Fasttanh, Hardtanh, ReLU, LeakyReLU, Sigmoid, SiLU, Hardswish)");
  }

  LayerArrayConfig layer_array(const Json& j, const std::string& path) const {
    if (!j.is_object()) fail_at(path, "expected an object, got ", j.dump());
    static const std::set<std::string> known{"input_size", "condition_size", "head_size", "channels", "kernel_size",
                                             "dilations",  "activation",     "gated",     "head_bias"};
    for (const auto& [key, value] : j.items())
      if (!known.count(key))
        fail_at(path + "." + key, "not supported: tempra reads NAM's architecture-1 WaveNet (",
                "gating modes, bottlenecks, groups, FiLM and 1x1 heads of later versions are refused)");
    LayerArrayConfig a;
    a.input_size = integer(member(j, path, "input_size"), path + ".input_size", 1, kMaxChannels);
    a.condition_size = integer(member(j, path, "condition_size"), path + ".condition_size", 1, kMaxChannels);
    a.head_size = integer(member(j, path, "head_size"), path + ".head_size", 1, kMaxChannels);
    a.channels = integer(member(j, path, "channels"), path + ".channels", 1, kMaxChannels);
    a.kernel_size = integer(member(j, path, "kernel_size"), path + ".kernel_size", 1, kMaxKernel);
    const Json& dilations = member(j, path, "dilations");
    if (!dilations.is_array() || dilations.empty() || dilations.size() > size_t(kMaxLayers))
      fail_at(path + ".dilations", "expected a list of 1 ... ", kMaxLayers, " dilations, got ", dilations.dump());
    for (size_t i = 0; i < dilations.size(); ++i)
      a.dilations.push_back(integer(dilations[i], path + ".dilations[" + std::to_string(i) + "]", 1, kMaxDilation));
    a.activation = activation(member(j, path, "activation"), path + ".activation");
    a.gated = boolean(member(j, path, "gated"), path + ".gated");
    a.head_bias = boolean(member(j, path, "head_bias"), path + ".head_bias");
    return a;
  }

  // Only the keys a config of this architecture has: a 0.5.x file may carry keys of later
  // cores (condition_dsp, in_channels/out_channels) that change what it plays.
  void only_keys(const Json& config, std::initializer_list<std::string_view> keys) const {
    for (const auto& [key, value] : config.items()) {
      bool known = false;
      for (const std::string_view k : keys) known = known || key == k;
      const bool mono =
          (key == "in_channels" || key == "out_channels") && value.is_number_integer() && value.get<int64_t>() == 1;
      if (!known && !mono) fail_at("config." + key, "not supported by tempra's NAM reader");
    }
  }

  WaveNetConfig wavenet(const Json& config) const {
    only_keys(config, {"layers", "head", "head_scale"});
    const auto head = config.find("head");
    if (head != config.end() && !head->is_null())
      fail_at("config.head", "a post-stack head is not supported (NAM's own A1 core refuses it too)");
    const Json& layers = member(config, "config", "layers");
    if (!layers.is_array() || layers.empty() || layers.size() > size_t(kMaxLayerArrays))
      fail_at("config.layers", "expected a list of 1 ... ", kMaxLayerArrays, " layer arrays");
    WaveNetConfig w;
    for (size_t i = 0; i < layers.size(); ++i)
      w.layer_arrays.push_back(layer_array(layers[i], "config.layers[" + std::to_string(i) + "]"));
    return w;
  }

  LstmConfig lstm(const Json& config) const {
    only_keys(config, {"num_layers", "input_size", "hidden_size"});
    LstmConfig l;
    l.num_layers = integer(member(config, "config", "num_layers"), "config.num_layers", 1, kMaxLstmLayers);
    l.input_size = integer(member(config, "config", "input_size"), "config.input_size", 1, kMaxChannels);
    l.hidden_size = integer(member(config, "config", "hidden_size"), "config.hidden_size", 1, kMaxHidden);
    return l;
  }

 private:
  std::string origin_;
};

}  // namespace

const char* activation_name(Activation activation) {
  for (const auto& [a, spelled] : kActivations)
    if (a == activation) return spelled;
  return "?";
}

const char* NamFile::architecture() const {
  return std::holds_alternative<WaveNetConfig>(config) ? "WaveNet" : "LSTM";
}

int64_t weight_count(const WaveNetConfig& config) {
  int64_t n = 0;
  for (const LayerArrayConfig& a : config.layer_arrays) {
    const int64_t c = a.channels, z = a.gated ? 2 * c : c;
    n += int64_t(a.input_size) * c;                      // rechannel, no bias
    const int64_t per_layer = z * c * a.kernel_size + z  // dilated conv and its bias
                              + z * a.condition_size     // condition mix-in, no bias
                              + c * c + c;               // residual 1x1 and its bias
    n += per_layer * int64_t(a.dilations.size());
    n += int64_t(a.head_size) * c + (a.head_bias ? a.head_size : 0);  // head rechannel
  }
  return n + 1;  // the head scale
}

int64_t weight_count(const LstmConfig& config) {
  int64_t n = 0;
  const int64_t h = config.hidden_size;
  for (int layer = 0; layer < config.num_layers; ++layer) {
    const int64_t in = layer == 0 ? config.input_size : h;
    n += 4 * h * (in + h) + 4 * h  // gate weights over [input, hidden] and biases
         + 2 * h;                  // the initial hidden and cell states
  }
  return n + h + 1;  // the output head and its bias
}

NamFile parse_nam(std::string_view text, std::string_view origin) {
  const Reader r(origin);
  Json j;
  try {
    bool too_deep = false;
    j = Json::parse(text.begin(), text.end(), [&](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxDepth) too_deep = true;
      return !too_deep;
    });
    if (too_deep) fail(kOp, origin, ": JSON nested deeper than ", kMaxDepth, " levels");
  } catch (const Json::parse_error& e) {
    fail(kOp, origin, ": not valid JSON (byte ", e.byte, "): ", e.what());
  } catch (const Json::exception& e) {  // a number out of double's range (1e999) and the like
    fail(kOp, origin, ": not valid JSON: ", e.what());
  }
  if (!j.is_object()) r.fail_at("(top level)", "expected a JSON object");
  NamFile f;
  const Json& version = r.member(j, "", "version");
  if (!version.is_string()) r.fail_at("version", "expected a string, got ", version.dump());
  f.version = version.get<std::string>();
  {
    int major = -1, minor = -1, patch = -1;
    char tail = 0;
    if (std::sscanf(f.version.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &tail) != 3 || major != 0 || minor != 5 ||
        patch < 0)
      r.fail_at("version", "'", f.version, "' is not supported (tempra reads NAM files of versions 0.5.x)");
  }
  const Json& architecture = r.member(j, "", "architecture");
  if (!architecture.is_string()) r.fail_at("architecture", "expected a string, got ", architecture.dump());
  const Json& config = r.member(j, "", "config");
  if (!config.is_object()) r.fail_at("config", "expected an object");
  const auto arch = architecture.get<std::string>();
  if (arch == "WaveNet")
    f.config = r.wavenet(config);
  else if (arch == "LSTM")
    f.config = r.lstm(config);
  else
    r.fail_at("architecture", "'", arch, "' is not supported (tempra runs WaveNet and LSTM)");
  const Json& weights = r.member(j, "", "weights");
  if (!weights.is_array()) r.fail_at("weights", "expected a list of numbers");
  f.weights.reserve(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!weights[i].is_number())
      r.fail_at("weights[" + std::to_string(i) + "]", "expected a number, got ", weights[i].dump());
    const double w = weights[i].get<double>();
    if (!std::isfinite(w) || std::abs(w) > double(std::numeric_limits<float>::max()))
      r.fail_at("weights[" + std::to_string(i) + "]", w, " is not a finite float");
    f.weights.push_back(static_cast<float>(w));
  }
  f.sample_rate = r.optional_number(j, "", "sample_rate");
  if (const auto it = j.find("metadata"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) r.fail_at("metadata", "expected an object, got ", it->dump());
    f.metadata.loudness = r.optional_number(*it, "metadata.", "loudness");
    f.metadata.gain = r.optional_number(*it, "metadata.", "gain");
    f.metadata.input_level_dbu = r.optional_number(*it, "metadata.", "input_level_dbu");
    f.metadata.output_level_dbu = r.optional_number(*it, "metadata.", "output_level_dbu");
    f.metadata.json = it->dump();
  }
  validate(f, origin);
  return f;
}

void validate(const NamFile& f, std::string_view origin) {
  const Reader r(origin);
  auto within = [&](const std::string& field, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) r.fail_at(field, "expected an integer in ", lo, " ... ", hi, ", got ", v);
  };
  double prewarm_samples = 1;
  if (const auto* w = std::get_if<WaveNetConfig>(&f.config)) {
    within("config.layers (count)", int64_t(w->layer_arrays.size()), 1, kMaxLayerArrays);
    double history_bytes = 0;
    int64_t field = 1;
    // The chain: the signal enters array 0 as one channel and is its condition; each next array
    // takes the previous one's layer output as input and its head output as its head input.
    for (size_t i = 0; i < w->layer_arrays.size(); ++i) {
      const LayerArrayConfig& a = w->layer_arrays[i];
      const std::string path = "config.layers[" + std::to_string(i) + "]";
      within(path + ".channels", a.channels, 1, kMaxChannels);
      within(path + ".head_size", a.head_size, 1, kMaxChannels);
      within(path + ".input_size", a.input_size, 1, kMaxChannels);
      within(path + ".kernel_size", a.kernel_size, 1, kMaxKernel);
      within(path + ".dilations (count)", int64_t(a.dilations.size()), 1, kMaxLayers);
      if (a.condition_size != 1)
        r.fail_at(path + ".condition_size", "expected 1 (the mono input), got ", a.condition_size);
      if (i == 0 && a.input_size != 1)
        r.fail_at(path + ".input_size", "expected 1 (the mono input), got ", a.input_size);
      if (i > 0) {
        const LayerArrayConfig& before = w->layer_arrays[i - 1];
        if (a.input_size != before.channels)
          r.fail_at(path + ".input_size", a.input_size, " differs from the channels of layer array ", i - 1, " (",
                    before.channels, ")");
        if (a.channels != before.head_size)
          r.fail_at(path + ".channels", a.channels, " differs from the head_size of layer array ", i - 1, " (",
                    before.head_size, ")");
      }
      for (size_t l = 0; l < a.dilations.size(); ++l) {
        const int d = a.dilations[l];
        within(path + ".dilations[" + std::to_string(l) + "]", d, 1, kMaxDilation);
        field += int64_t(d) * (a.kernel_size - 1);
        history_bytes += (double(d) * (a.kernel_size - 1) + 2.0 * double(AmpModel::kMaxBlock)) *
                         double((a.channels + 15) / 16 * 16) * 4;
      }
    }
    if (w->layer_arrays.back().head_size != 1)
      r.fail_at("config.layers[" + std::to_string(w->layer_arrays.size() - 1) + "].head_size",
                "the last layer array's head makes the mono output: expected 1, got ",
                w->layer_arrays.back().head_size);
    if (field > kMaxReceptiveField)
      r.fail_at("config.layers", "a receptive field of ", field,
                " samples (dilations x kernel sizes); tempra runs up to ", kMaxReceptiveField);
    if (history_bytes > kMaxHistoryBytes)
      r.fail_at("config.layers", "the layers' histories would take ", int64_t(history_bytes / (1 << 20)),
                " MiB (dilations x kernel sizes x channels); tempra runs models up to ",
                int64_t(kMaxHistoryBytes) >> 20, " MiB");
    if (int64_t(f.weights.size()) != weight_count(*w))
      r.fail_at("weights", "the WaveNet config takes ", weight_count(*w), " weights, the file has ", f.weights.size());
    prewarm_samples = double(field);
  } else {
    const auto& l = std::get<LstmConfig>(f.config);
    within("config.num_layers", l.num_layers, 1, kMaxLstmLayers);
    within("config.hidden_size", l.hidden_size, 1, kMaxHidden);
    if (l.input_size != 1) r.fail_at("config.input_size", "expected 1 (the mono input), got ", l.input_size);
    if (int64_t(f.weights.size()) != weight_count(l))
      r.fail_at("weights", "the LSTM config takes ", weight_count(l), " weights, the file has ", f.weights.size());
    prewarm_samples = f.sample_rate ? 0.5 * *f.sample_rate : 1.0;
  }
  if (f.sample_rate && !(*f.sample_rate >= 1000 && *f.sample_rate <= 1e6))
    r.fail_at("sample_rate", "expected a rate in 1000 ... 1000000 Hz, got ", *f.sample_rate);
  if (prewarm_samples * double(f.weights.size()) > kMaxPrewarmWork)
    r.fail_at("config", "prewarming would take ", prewarm_samples, " samples x ", f.weights.size(),
              " weights; tempra runs models up to ", kMaxPrewarmWork, " multiply-adds per reset");
  auto level = [&](const char* key, const std::optional<double>& db) {
    if (db && !(std::abs(*db) <= 200))
      r.fail_at(std::string("metadata.") + key, "expected a level in -200 ... 200 dB, got ", *db);
  };
  level("loudness", f.metadata.loudness);
  level("input_level_dbu", f.metadata.input_level_dbu);
  level("output_level_dbu", f.metadata.output_level_dbu);
}

NamFile read_nam(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  check(!ec, kOp, path.string(), ": cannot read: ", ec.message());
  check(size <= (uint64_t(256) << 20), kOp, path.string(), ": ", size,
        " bytes is larger than any NAM profile (256 MiB at most)");
  std::ifstream in(path, std::ios::binary);
  check(bool(in), kOp, path.string(), ": cannot open");
  std::string text(size, '\0');
  in.read(text.data(), std::streamsize(size));
  check(in.gcount() == std::streamsize(size), kOp, path.string(), ": short read");
  return parse_nam(text, path.string());
}

std::string format_nam(const NamFile& f) {
  nlohmann::ordered_json j;
  j["version"] = f.version;
  j["architecture"] = f.architecture();
  if (const auto* w = std::get_if<WaveNetConfig>(&f.config)) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const LayerArrayConfig& a : w->layer_arrays)
      layers.push_back({{"input_size", a.input_size},
                        {"condition_size", a.condition_size},
                        {"head_size", a.head_size},
                        {"channels", a.channels},
                        {"kernel_size", a.kernel_size},
                        {"dilations", a.dilations},
                        {"activation", activation_name(a.activation)},
                        {"gated", a.gated},
                        {"head_bias", a.head_bias}});
    j["config"] = {{"layers", layers}, {"head", nullptr}, {"head_scale", f.weights.empty() ? 0.0f : f.weights.back()}};
  } else {
    const auto& l = std::get<LstmConfig>(f.config);
    j["config"] = {{"input_size", l.input_size}, {"hidden_size", l.hidden_size}, {"num_layers", l.num_layers}};
  }
  j["weights"] = f.weights;
  if (f.sample_rate) j["sample_rate"] = *f.sample_rate;
  nlohmann::ordered_json metadata = nlohmann::ordered_json::parse(f.metadata.json);
  auto set = [&](const char* key, const std::optional<double>& v) {
    if (v) metadata[key] = *v;
  };
  set("loudness", f.metadata.loudness);
  set("gain", f.metadata.gain);
  set("input_level_dbu", f.metadata.input_level_dbu);
  set("output_level_dbu", f.metadata.output_level_dbu);
  j["metadata"] = metadata;
  return j.dump() + "\n";
}

void write_nam(const std::filesystem::path& path, const NamFile& file) {
  const std::string text = format_nam(file);
  io::write_atomically(path, kOp, [&](std::FILE* out, const std::string& temp_name) {
    check(std::fwrite(text.data(), 1, text.size(), out) == text.size(), kOp, temp_name, ": write failed");
  });
}

std::optional<WaveNetConfig> wavenet_preset(std::string_view name) {
  // NAM's trainer (nam/train/core.py): two layer arrays of kernel 3, Tanh, not gated; the first
  // over the dilations 1 ... 512 (standard) or 1 ... 64, the second over 1 ... 512 again (standard)
  // or 128, 256, 512, 1 ... 512.
  int channels = 0;
  if (name == "standard")
    channels = 16;
  else if (name == "lite")
    channels = 12;
  else if (name == "feather")
    channels = 8;
  else if (name == "nano")
    channels = 4;
  else
    return std::nullopt;
  const std::vector<int> full{1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  const std::vector<int> first = name == "standard" ? full : std::vector<int>{1, 2, 4, 8, 16, 32, 64};
  const std::vector<int> second =
      name == "standard" ? full : std::vector<int>{128, 256, 512, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  WaveNetConfig w;
  w.layer_arrays.push_back({.input_size = 1,
                            .condition_size = 1,
                            .head_size = channels / 2,
                            .channels = channels,
                            .kernel_size = 3,
                            .dilations = first,
                            .activation = Activation::tanh,
                            .gated = false,
                            .head_bias = false});
  w.layer_arrays.push_back({.input_size = channels,
                            .condition_size = 1,
                            .head_size = 1,
                            .channels = channels / 2,
                            .kernel_size = 3,
                            .dilations = second,
                            .activation = Activation::tanh,
                            .gated = false,
                            .head_bias = true});
  return w;
}

std::optional<LstmConfig> lstm_preset(std::string_view name) {
  if (name == "standard") return LstmConfig{.num_layers = 1, .input_size = 1, .hidden_size = 24};
  if (name == "lite") return LstmConfig{.num_layers = 2, .input_size = 1, .hidden_size = 8};
  if (name == "feather") return LstmConfig{.num_layers = 1, .input_size = 1, .hidden_size = 16};
  if (name == "nano") return LstmConfig{.num_layers = 1, .input_size = 1, .hidden_size = 12};
  return std::nullopt;
}

}  // namespace tempra::audio
