// apps/tempra/info.cpp: `tempra info`, after llama.cpp's gguf-dump. Shapes print the tempra way
// (outermost first, the reverse of ggml's ne); the JSON also carries ne as stored.
#include "info.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "llm_cli.h"
#include "tempra/io/ggml_types.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/llm/model/expert_cache.h"

namespace tempra::app {
namespace {

using io::GgufArray;
using io::GgufFile;
using io::GgufValue;

constexpr size_t kShownItems = 5;      // array items shown in text
constexpr size_t kJsonItems = 8;       // array items in the JSON "head"
constexpr size_t kShownStringChars = 60;

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kShownStringChars; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  if (s.size() > kShownStringChars) out += "...";
  return out + "\"";
}

template <class T>
std::string scalar_text(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return quoted(v);
  else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) return std::to_string(int(v));
  else {
    std::ostringstream out;
    out.precision(std::is_same_v<T, double> ? 17 : 9);
    out << v;
    return out.str();
  }
}

std::string array_text(const GgufArray& a);

template <class T>
std::string item_text(const T& v) {
  if constexpr (std::is_same_v<T, GgufArray>) return array_text(v);
  else return scalar_text(v);
}

std::string array_text(const GgufArray& a) {
  return std::visit(
      [&](const auto& items) {
        std::string out = "[";
        for (size_t i = 0; i < items.size() && i < kShownItems; ++i) {
          if (i) out += ", ";
          out += item_text(static_cast<typename std::decay_t<decltype(items)>::value_type>(items[i]));
        }
        if (items.size() > kShownItems) out += ", ...";
        return out + "]";
      },
      a.items);
}

std::string value_text(const GgufValue& v) {
  if (const auto* a = std::get_if<GgufArray>(&v.value)) return std::to_string(a->size()) + " items " + array_text(*a);
  return std::visit([](const auto& x) { return item_text(x); }, v.value);
}

nlohmann::json array_json(const GgufArray& a, size_t limit);

template <class T>
nlohmann::json item_json(const T& v) {
  if constexpr (std::is_same_v<T, GgufArray>) return array_json(v, kJsonItems);
  else return v;
}

nlohmann::json array_json(const GgufArray& a, size_t limit) {
  nlohmann::json head = nlohmann::json::array();
  std::visit(
      [&](const auto& items) {
        using T = typename std::decay_t<decltype(items)>::value_type;
        for (size_t i = 0; i < items.size() && i < limit; ++i) head.push_back(item_json(static_cast<T>(items[i])));
      },
      a.items);
  return {{"type", "array[" + io::type_name(a.element_type()) + "]"}, {"length", a.size()}, {"head", head}};
}

std::string shape_text(const Dims& d) { return to_string(d); }

// The routed experts of a mixture-of-experts file (tensors named *_exps.weight, stacked
// [n_expert, rows, cols]): what --moe-stream would stream and what stays resident.
struct ExpertSummary {
  int64_t layers = 0, experts = 0;
  uint64_t total_bytes = 0, expert_bytes = 0, rest_bytes = 0;
};

ExpertSummary expert_summary(const GgufFile& f) {
  ExpertSummary s;
  std::set<std::string> layers;
  std::map<std::string, uint64_t> widest;  // "ffn_gate", ... -> one expert's largest matrix over the layers
  uint64_t all = 0;
  for (const auto& t : f.tensors()) {
    all += t.nbytes;
    const std::string suffix = "_exps.weight";
    if (t.name.size() <= suffix.size() || t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) != 0 ||
        t.n_dims != 3 || t.ne[2] <= 0)
      continue;
    const size_t dot = t.name.rfind('.', t.name.size() - suffix.size());
    s.experts = t.ne[2];
    s.total_bytes += t.nbytes;
    layers.insert(t.name.substr(0, dot + 1));
    uint64_t& w = widest[t.name.substr(dot + 1, t.name.size() - suffix.size() - dot - 1)];
    w = std::max(w, t.nbytes / uint64_t(t.ne[2]));
  }
  s.layers = int64_t(layers.size());
  // The slot --moe-stream's cache gives one expert (expert_cache.h).
  s.expert_bytes = llm::expert_slot_bytes(widest["ffn_gate"], widest["ffn_up"], widest["ffn_down"]);
  s.rest_bytes = all - s.total_bytes;
  return s;
}

void print_experts(const ExpertSummary& s) {
  if (s.layers == 0) return;
  const uint64_t available = available_memory();
  std::cout << "experts: " << s.layers << " layers x " << s.experts << " experts, " << mib(s.total_bytes)
            << " (one expert " << mib(s.expert_bytes) << "); the rest of the model " << mib(s.rest_bytes) << "\n";
  if (available == 0) return;
  std::cout << "memory available: " << mib(available) << ": "
            << (s.total_bytes + s.rest_bytes <= available ? "the whole model fits"
                                                          : "the whole model does not fit")
            << "; --moe-stream keeps the rest resident and --moe-cache-mb N MiB of experts (25%: "
            << mib(s.total_bytes / 4) << ", 50%: " << mib(s.total_bytes / 2) << ", 100%: " << mib(s.total_bytes)
            << ")\n";
}

int print_json(const GgufFile& f) {
  nlohmann::json meta = nlohmann::json::array();
  for (const auto& [key, value] : f.metadata().entries()) {
    nlohmann::json entry{{"key", key}, {"type", io::describe_type(value)}};
    if (const auto* a = std::get_if<GgufArray>(&value.value)) {
      const nlohmann::json summary = array_json(*a, kJsonItems);
      entry["length"] = summary["length"];
      entry["head"] = summary["head"];
    } else {
      entry["value"] = std::visit([](const auto& x) { return item_json(x); }, value.value);
    }
    meta.push_back(std::move(entry));
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : f.tensors()) {
    const Dims shape = t.shape();
    tensors.push_back({{"name", t.name},
                       {"type", io::ggml_type_name(t.ggml_type)},
                       {"ggml_type", t.ggml_type},
                       {"shape", std::vector<int64_t>(shape.begin(), shape.end())},
                       {"ne", std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                       {"offset", t.offset},
                       {"bytes", t.nbytes}});
  }
  nlohmann::json out{{"file", f.name()},          {"version", f.version()},
                           {"alignment", f.alignment()}, {"data_offset", f.data_offset()},
                           {"file_size", f.file_size()}, {"metadata", meta},
                           {"tensors", tensors}};
  if (const ExpertSummary e = expert_summary(f); e.layers > 0)
    out["experts"] = {{"layers", e.layers},
                      {"experts_per_layer", e.experts},
                      {"bytes", e.total_bytes},
                      {"expert_bytes", e.expert_bytes},
                      {"rest_bytes", e.rest_bytes}};
  // Metadata strings need not be UTF-8: invalid bytes print as U+FFFD instead of throwing.
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

int print_text(const GgufFile& f) {
  std::cout << "file: " << f.name() << "\n"
            << "GGUF version: " << f.version() << "\n"
            << "alignment: " << f.alignment() << "\n"
            << "data offset: " << f.data_offset() << "\n"
            << "file size: " << f.file_size() << "\n";
  print_experts(expert_summary(f));
  std::cout << "\n"
            << "metadata (" << f.metadata().size() << " keys):\n";
  std::vector<std::pair<std::string, std::string>> rows;
  size_t key_width = 0, type_width = 0;
  for (const auto& [key, value] : f.metadata().entries()) {
    key_width = std::max(key_width, key.size());
    type_width = std::max(type_width, io::describe_type(value).size());
  }
  for (const auto& [key, value] : f.metadata().entries()) {
    const std::string type = io::describe_type(value);
    std::cout << "  " << key << std::string(key_width - key.size() + 2, ' ') << type
              << std::string(type_width - type.size() + 2, ' ') << value_text(value) << "\n";
  }
  std::cout << "\ntensors (" << f.tensors().size() << "):\n";
  std::vector<std::vector<std::string>> table{{"name", "type", "shape", "offset", "bytes"}};
  for (const auto& t : f.tensors())
    table.push_back({t.name, io::ggml_type_name(t.ggml_type), shape_text(t.shape()), std::to_string(t.offset),
                     std::to_string(t.nbytes)});
  std::vector<size_t> width(5, 0);
  for (const auto& row : table)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : table) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += ' ';
      line += c >= 3 ? pad + row[c] : row[c] + pad;  // numbers right-aligned
      line += ' ';
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
  return 0;
}

}  // namespace

int run_info(const cli::Args& args) {
  const GgufFile file = GgufFile::open(args.positional("file"));
  return args.flag("--json") ? print_json(file) : print_text(file);
}

}  // namespace tempra::app
