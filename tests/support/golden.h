// tests/support/golden.h: reads the golden files tools/gen_goldens.py writes.
//
// A golden file is a safetensors file (8-byte little-endian header length, JSON header, raw
// little-endian tensors) whose __metadata__["cases"] is a JSON list of
// {name, op, inputs, views, params, outputs}. Inputs and outputs name tensors in the same file.
#pragma once

#include <map>
#include <ostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tempra/core/array.h"

namespace tempra::testing {

struct GoldenCase {
  std::string file;  // family: "unary", "neural", ...
  std::string name;
  std::string op;
  std::vector<std::string> inputs;
  std::vector<std::string> views;  // "" for none
  nlohmann::json params;
  std::vector<std::string> outputs;
};

class GoldenFile {
 public:
  // Loads and validates the whole file; throws tempra::Error naming the file and field.
  GoldenFile(ExecContext& ctx, const std::string& path);
  const std::vector<GoldenCase>& cases() const { return cases_; }
  const Array& tensor(const std::string& name) const;

 private:
  std::string path_;
  std::map<std::string, Array> tensors_;
  std::vector<GoldenCase> cases_;
};

// How gtest prints a case in test listings: "neural/rope_neox_rank4".
inline void PrintTo(const GoldenCase& c, std::ostream* out) { *out << c.file << "/" << c.name; }

// Every case of every family (file names without extension), for test parameterization.
std::vector<GoldenCase> load_all_cases(const std::vector<std::string>& families);
std::string golden_path(const std::string& family);

}  // namespace tempra::testing
