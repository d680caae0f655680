// tempra/llm/model/architectures.cpp: see architectures.h.
#include "tempra/llm/model/architectures.h"

#include <array>

#include "tempra/llm/model/deepseek2.h"
#include "tempra/llm/model/gemma3.h"
#include "tempra/llm/model/llama.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/model/qwen35.h"
#include "tempra/llm/model/qwen3moe.h"

namespace tempra::llm {
namespace {

// Architectures with routed experts take the load options (expert streaming); the others need none.
template <class Arch>
std::unique_ptr<Model> load_as(const io::GgufModel& gguf, const LoadOptions& options) {
  if constexpr (requires { Arch::load(gguf, options); })
    return std::make_unique<Arch>(Arch::load(gguf, options));
  else
    return std::make_unique<Arch>(Arch::load(gguf));
}

constexpr std::array<Architecture, 6> kArchitectures = {{
    {"deepseek2", load_as<DeepSeek2Model>, DeepSeek2Model::synth_tensors, DeepSeek2Model::synth_hparams},
    {"gemma3", load_as<Gemma3Model>, Gemma3Model::synth_tensors, Gemma3Model::synth_hparams},
    {"llama", load_as<LlamaModel>, LlamaModel::synth_tensors, LlamaModel::synth_hparams},
    {"qwen3", load_as<Qwen3Model>, Qwen3Model::synth_tensors},
    {"qwen35", load_as<Qwen35Model>, Qwen35Model::synth_tensors, Qwen35Model::synth_hparams},
    {"qwen3moe", load_as<Qwen3MoeModel>, Qwen3MoeModel::synth_tensors, Qwen3MoeModel::synth_hparams},
}};

}  // namespace

std::span<const Architecture> architectures() {
  return kArchitectures;
}

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture& a : kArchitectures)
    if (a.name == name) return &a;
  return nullptr;
}

std::string supported_architectures() {
  std::string names;
  for (const Architecture& a : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

}  // namespace tempra::llm
