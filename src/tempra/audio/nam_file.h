// tempra/audio/nam_file.h: Neural Amp Modeler's `.nam` profile, read, checked and written.
//
// A `.nam` file is JSON: {"version", "architecture", "config", "weights", "sample_rate"?,
// "metadata"?}. `weights` is one flat list in the order NeuralAmpModelerCore reads it (see
// wavenet.h and lstm.h for each architecture's order). Files of versions 0.5.x are read; the
// architectures are NAM's WaveNet ("architecture 1": layer arrays of gated or plain dilated
// convolutions) and LSTM. Everything else (ConvNet, Linear, the A2 WaveNet's gating modes and
// bottlenecks, a post-stack head, FiLM, slimmable containers) is refused by name.
//
// parse_nam checks everything a model needs before any model is built: types, ranges, the chain
// of layer arrays, and that the weight count is exactly what the config implies, so an error
// names the field ("config.layers[1].dilations[3]: expected a positive integer, got -2") and a
// truncated or hand-edited file never reaches the audio thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tempra::audio {

// NAM's activation names: "Tanh", "Fasttanh" (its rational approximation), "Hardtanh", "ReLU",
// "LeakyReLU" (slope 0.01), "Sigmoid", "SiLU", "Hardswish".
enum class Activation : uint8_t { tanh, fast_tanh, hard_tanh, relu, leaky_relu, sigmoid, silu, hardswish };
const char* activation_name(Activation activation);

// One layer array of a WaveNet: a 1x1 "rechannel" from input_size to channels, then one layer
// per dilation (a dilated convolution of kernel_size taps plus a 1x1 mix-in of the condition,
// the activation (gated: tanh-like half times sigmoid half), a residual 1x1), and a 1x1 from
// the summed layer outputs to head_size.
struct LayerArrayConfig {
  int input_size = 1;
  int condition_size = 1;
  int head_size = 1;
  int channels = 1;
  int kernel_size = 1;
  std::vector<int> dilations;
  Activation activation = Activation::tanh;
  bool gated = false;
  bool head_bias = false;
};

struct WaveNetConfig {
  std::vector<LayerArrayConfig> layer_arrays;  // config.layers
};

struct LstmConfig {
  int num_layers = 1;
  int input_size = 1;
  int hidden_size = 1;
};

// The metadata fields a player acts on (all optional in the file).
struct NamMetadata {
  std::optional<double> loudness;          // dB, the output's loudness on NAM's standard input
  std::optional<double> gain;              // the trainer's estimate of the model's gain
  std::optional<double> input_level_dbu;   // the level at which the capture's input hit 0 dBFS
  std::optional<double> output_level_dbu;  // the same for the output
  std::string json = "{}";                 // the whole metadata object, kept for rewriting
};

struct NamFile {
  std::string version = "0.5.4";
  std::variant<WaveNetConfig, LstmConfig> config;
  std::vector<float> weights;
  std::optional<double> sample_rate;  // the rate the model was trained at (Hz); absent in old files
  NamMetadata metadata;

  const char* architecture() const;  // "WaveNet" or "LSTM"
};

// The number of weights a config takes (a WaveNet's includes its trailing head scale).
int64_t weight_count(const WaveNetConfig& config);
int64_t weight_count(const LstmConfig& config);

// Parses and checks a `.nam` text; `origin` (a file name) begins every error message.
NamFile parse_nam(std::string_view text, std::string_view origin = "nam");
// Checks what a model needs of a profile, whoever built it (parse_nam calls it last; so does
// make_amp_model): the chain of layer arrays, field bounds, the weight count, and bounds on what
// the model would allocate and on the work of a reset. Errors name the field, after `origin`.
void validate(const NamFile& file, std::string_view origin = "profile");
// Reads a file (at most 256 MiB) and parses it.
NamFile read_nam(const std::filesystem::path& path);
// The JSON text of a profile: the fields parse_nam reads, weights printed exactly (9 significant
// digits round-trip a float).
std::string format_nam(const NamFile& file);
// Writes format_nam's text atomically (a reader sees the old file or the whole new one).
void write_nam(const std::filesystem::path& path, const NamFile& file);

// NAM's stock WaveNet configurations ("standard", "lite", "feather", "nano", as its trainer
// defines them) and LSTM ones (the same names, the trainer's sizes); nullopt for another name.
std::optional<WaveNetConfig> wavenet_preset(std::string_view name);
std::optional<LstmConfig> lstm_preset(std::string_view name);

}  // namespace tempra::audio
