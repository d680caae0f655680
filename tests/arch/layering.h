// tests/arch/layering.h: the layer table, and the include scanner that enforces it.
//
// Each folder under src/tempra is a layer, and a folder of `llm` is a room of its own (llm/template,
// llm/tokenizer, llm/model, llm/decode, llm/runtime): a file may include tempra headers only from
// the layers its row allows (docs/ARCHITECTURE.md holds the same table: change both together). A
// file's layer, and an include's, is the longest folder path under src/tempra that has a row.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tempra::arch {

// layer -> the layers its files may include (itself included).
inline const std::map<std::string, std::set<std::string>>& layer_table() {
  static const std::map<std::string, std::set<std::string>> table{
      {"core", {"core"}},
      {"quant", {"core", "quant"}},
      {"backend", {"core", "quant", "backend"}},
      {"ops", {"core", "quant", "backend", "ops"}},
      {"ag", {"core", "quant", "backend", "ops", "ag"}},
      {"typed", {"core", "ops", "ag", "typed"}},
      {"io", {"core", "quant", "io"}},
      {"optim", {"core", "quant", "backend", "ops", "ag", "typed", "io", "optim"}},
      // The rooms of llm, lowest first. Below them lies everything of the layers above.
      {"llm/template", {"core", "llm/template"}},
      {"llm/tokenizer", {"core", "io", "llm/tokenizer"}},
      {"llm/model", {"core", "quant", "backend", "ops", "ag", "typed", "io", "optim", "llm/model"}},
      {"llm/decode", {"core", "llm/tokenizer", "llm/decode"}},
      {"llm/runtime", {"core", "quant", "backend", "ops", "ag", "typed", "io", "optim", "llm/template",
                       "llm/tokenizer", "llm/model", "llm/decode", "llm/runtime"}},
      {"serve", {"core", "quant", "backend", "ops", "ag", "typed", "io", "optim", "llm/template", "llm/tokenizer",
                 "llm/model", "llm/decode", "llm/runtime", "serve"}},
      {"train", {"core", "quant", "backend", "ops", "ag", "typed", "io", "optim", "llm/template", "llm/tokenizer",
                 "llm/model", "llm/decode", "llm/runtime", "train"}},
      {"audio", {"core", "quant", "backend", "ops", "io", "audio"}},
      // Training NAM's WaveNets: the audio models and the op library's gradients and optimizers.
      {"audio/train", {"core", "quant", "backend", "ops", "ag", "typed", "io", "optim", "audio", "audio/train"}},
  };
  return table;
}

struct Violation {
  std::string file;
  int line;
  std::string message;
};

// Scans one file's text as if it lived in `layer`; returns every include it may not have.
std::vector<Violation> check_source(const std::string& file, const std::string& layer, const std::string& text);
// The layer of a folder path under src/tempra ("llm/model/x" -> "llm/model", "core" -> "core"):
// its longest leading part that has a row in the table, or the path's first folder when none has.
std::string layer_of(const std::string& folder_path);
// Scans every source under root/src/tempra; a folder missing from the table is itself a violation.
std::vector<Violation> check_tree(const std::filesystem::path& root);

}  // namespace tempra::arch
