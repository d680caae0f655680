// tempra/llm/model/architectures.h: the table of supported architectures, one row per file.
//
// Contract: each row names a general.architecture value and the two things its file provides:
// how to load a GGUF of it (load_model picks the row by name) and the tensor table and extra
// hyperparameters the synthesizer writes for it (synth.h). Adding an architecture is its file plus one row here
// (docs/ARCHITECTURE.md, "Adding an architecture").
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {

struct Architecture {
  std::string_view name;  // general.architecture
  std::unique_ptr<Model> (*load)(const io::GgufModel&, const LoadOptions&);
  std::vector<SynthTensor> (*synth_tensors)(const SynthSpec&);
  // The ARCH.* keys the synthesizer writes beyond the shared ones (add_synth_hparams); may be null.
  void (*synth_hparams)(io::GgufMetadata&, const SynthSpec&) = nullptr;
};

std::span<const Architecture> architectures();
// The row named `name`, or null.
const Architecture* find_architecture(std::string_view name);
// "gemma3, llama, qwen3, ...": the names, for error messages and --help.
std::string supported_architectures();

}  // namespace tempra::llm
