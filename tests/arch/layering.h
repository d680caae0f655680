// tests/arch/layering.h: the layer table, and the include scanner that enforces it.
//
// Each folder under src/tempra is a layer; a file may include tempra headers only from the
// layers its row allows (docs/ARCHITECTURE.md holds the same table: change both together).
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
      {"llm", {"core", "quant", "backend", "ops", "ag", "typed", "io", "optim", "llm"}},
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
// Scans every source under root/src/tempra; a folder missing from the table is itself a violation.
std::vector<Violation> check_tree(const std::filesystem::path& root);

}  // namespace tempra::arch
