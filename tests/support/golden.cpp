// tests/support/golden.cpp
#include "support/golden.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "tempra/core/error.h"

namespace tempra::testing {
namespace {

DType dtype_from_safetensors(const std::string& s, const std::string& path) {
  static const std::map<std::string, DType> names{
      {"F32", DType::f32}, {"F64", DType::f64}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"I8", DType::i8},
      {"U8", DType::u8},   {"I16", DType::i16}, {"I32", DType::i32}, {"I64", DType::i64},   {"BOOL", DType::boolean}};
  auto it = names.find(s);
  check(it != names.end(), "golden", path, ": unknown dtype ", s);
  return it->second;
}

}  // namespace

std::string golden_path(const std::string& family) {
  return std::string(TEMPRA_GOLDEN_DIR) + "/" + family + ".safetensors";
}

GoldenFile::GoldenFile(ExecContext& ctx, const std::string& path) : path_(path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "golden", "cannot open ", path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(bytes.size() >= 8, "golden", path, ": shorter than the 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  check(header_len <= bytes.size() - 8, "golden", path, ": header length ", header_len, " exceeds the file");
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_len));
  const size_t data_start = 8 + header_len;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const DType dtype = dtype_from_safetensors(entry.at("dtype").get<std::string>(), path);
    const auto shape_values = entry.at("shape").get<std::vector<int64_t>>();
    const Dims shape(shape_values.begin(), shape_values.end());
    const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
    check(offsets.size() == 2 && offsets[0] <= offsets[1] && data_start + offsets[1] <= bytes.size(), "golden",
          path, ": tensor ", name, " has bad data_offsets");
    check(offsets[1] - offsets[0] == dtype.bytes_for(shape.product()), "golden", path, ": tensor ", name,
          " size does not match its shape");
    Array a = Array::empty(ctx, shape, dtype);
    std::memcpy(a.raw_data(), bytes.data() + data_start + offsets[0], offsets[1] - offsets[0]);
    tensors_.emplace(name, std::move(a));
  }
  const nlohmann::json cases = nlohmann::json::parse(header.at("__metadata__").at("cases").get<std::string>());
  std::string family = path.substr(path.find_last_of('/') + 1);
  family = family.substr(0, family.find('.'));
  for (const auto& c : cases) {
    GoldenCase g;
    g.file = family;
    g.name = c.at("name").get<std::string>();
    g.op = c.at("op").get<std::string>();
    g.inputs = c.at("inputs").get<std::vector<std::string>>();
    for (const auto& v : c.at("views")) g.views.push_back(v.is_null() ? "" : v.get<std::string>());
    g.params = c.at("params");
    g.outputs = c.at("outputs").get<std::vector<std::string>>();
    check(g.views.size() == g.inputs.size(), "golden", path, ": case ", g.name, " has ", g.views.size(),
          " views for ", g.inputs.size(), " inputs");
    cases_.push_back(std::move(g));
  }
}

const Array& GoldenFile::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  check(it != tensors_.end(), "golden", path_, ": no tensor named ", name);
  return it->second;
}

std::vector<GoldenCase> load_all_cases(const std::vector<std::string>& families) {
  ExecContext ctx(ExecOptions{.threads = 1});
  std::vector<GoldenCase> all;
  for (const auto& family : families) {
    GoldenFile file(ctx, golden_path(family));
    all.insert(all.end(), file.cases().begin(), file.cases().end());
  }
  return all;
}

}  // namespace tempra::testing
