// tests/arch/layering.cpp
#include "arch/layering.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace tempra::arch {

std::string layer_of(const std::string& folder_path) {
  std::string best;
  for (size_t end = folder_path.find('/'); ; end = folder_path.find('/', end + 1)) {
    const std::string prefix = folder_path.substr(0, end);
    if (layer_table().count(prefix)) best = prefix;
    if (end == std::string::npos) break;
  }
  return best.empty() ? folder_path.substr(0, folder_path.find('/')) : best;
}

std::vector<Violation> check_source(const std::string& file, const std::string& layer, const std::string& text) {
  std::vector<Violation> found;
  const auto row = layer_table().find(layer);
  if (row == layer_table().end()) {
    found.push_back({file, 0, "layer '" + layer + "' is not in the layer table (tests/arch/layering.h)"});
    return found;
  }
  static const std::regex include_line(R"(^\s*#\s*include\s*[<"]tempra/((?:[A-Za-z0-9_]+/)+))");
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::smatch m;
    if (!std::regex_search(line, m, include_line)) continue;
    const std::string target = layer_of(m[1]);
    if (!row->second.count(target))
      found.push_back({file, number, "layer '" + layer + "' includes a header of layer '" + target + "': " + line});
  }
  return found;
}

std::vector<Violation> check_tree(const std::filesystem::path& root) {
  std::vector<Violation> found;
  const auto base = root / "src" / "tempra";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(base)) {
    if (!entry.is_regular_file()) continue;
    const auto ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp" && ext != ".hpp" && ext != ".inc") continue;
    const std::string layer = layer_of(entry.path().parent_path().lexically_relative(base).generic_string());
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto v = check_source(entry.path().string(), layer, text.str());
    found.insert(found.end(), v.begin(), v.end());
  }
  return found;
}

}  // namespace tempra::arch
