// tempra/io/gguf_model.cpp: split-file loading (llama.cpp examples/gguf-split conventions).
#include "tempra/io/gguf_model.h"

#include <cstdio>
#include <regex>

#include "tempra/core/error.h"

namespace tempra::io {

std::optional<int64_t> integer_value(const GgufValue& value) {
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>)
            if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
          return static_cast<int64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      value.value);
}

namespace {

const std::regex& shard_pattern() {
  static const std::regex pattern(R"(^(.*)-([0-9]{5})-of-([0-9]{5})\.gguf$)");
  return pattern;
}

int64_t split_field(const GgufFile& file, const char* key) {
  const GgufValue* v = file.metadata().find(key);
  if (!v) fail("gguf", file.name(), ": split file has no '", key, "'");
  const std::optional<int64_t> n = integer_value(*v);
  if (!n) fail("gguf", file.name(), ": '", key, "' is ", describe_type(*v), ", expected an integer");
  return *n;
}

}  // namespace

std::filesystem::path gguf_shard_path(const std::filesystem::path& first, int index, int count) {
  std::smatch m;
  const std::string s = first.string();
  if (!std::regex_match(s, m, shard_pattern()))
    fail("gguf", s, ": a split model's first file must be named <prefix>-00001-of-NNNNN.gguf");
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", index + 1, count);
  return m[1].str() + suffix;
}

GgufModel GgufModel::open(const std::filesystem::path& path, TensorMapping mapping) {
  GgufModel model;
  model.shards_.push_back(GgufFile::open(path, mapping));
  if (model.shards_.front().metadata().contains("split.count")) {
    const GgufFile& first = model.shards_.front();
    const int64_t count = split_field(first, "split.count");
    const int64_t no = split_field(first, "split.no");
    if (count < 1 || count > 99999) fail("gguf", first.name(), ": split.count ", count, " is outside [1, 99999]");
    if (no != 0)
      fail("gguf", first.name(), ": this is shard ", no + 1, " of ", count, "; open the first shard (split.no 0)");
    model.shards_.reserve(static_cast<size_t>(count));  // `first` is not used past this point
    for (int64_t i = 1; i < count; ++i) {
      const std::filesystem::path shard_path = gguf_shard_path(path, static_cast<int>(i), static_cast<int>(count));
      model.shards_.push_back(GgufFile::open(shard_path, mapping));
      const GgufFile& shard = model.shards_.back();
      if (split_field(shard, "split.count") != count || split_field(shard, "split.no") != i)
        fail("gguf", shard.name(), ": split.no/split.count are ", split_field(shard, "split.no"), "/",
             split_field(shard, "split.count"), ", expected ", i, "/", count);
    }
  }
  for (size_t s = 0; s < model.shards_.size(); ++s) {
    const GgufFile& shard = model.shards_[s];
    for (size_t i = 0; i < shard.tensors().size(); ++i) {
      const std::string& name = shard.tensors()[i].name;
      if (auto it = model.index_.find(name); it != model.index_.end())
        fail("gguf", shard.name(), ": tensor '", name, "' is also in ", model.shards_[it->second.shard].name());
      model.index_.emplace(name, Location{s, i});
      model.order_.push_back(Location{s, i});
    }
  }
  const GgufFile& first = model.shards_.front();
  if (const GgufValue* v = first.metadata().find("split.tensors.count")) {
    const std::optional<int64_t> n = integer_value(*v);
    if (!n || *n != static_cast<int64_t>(model.order_.size()))
      fail("gguf", first.name(), ": split.tensors.count says ", n.value_or(-1), " tensors, the shards hold ",
           model.order_.size());
  }
  return model;
}

const GgufTensorInfo* GgufModel::find_tensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &info(it->second);
}

Array GgufModel::tensor(std::string_view name) const {
  auto it = index_.find(name);
  check(it != index_.end(), "gguf", shards_.front().name(), ": no tensor named '", name, "'");
  if (auto r = replaced_.find(name); r != replaced_.end()) return r->second;
  return shards_[it->second.shard].tensor(it->second.index);
}

void GgufModel::replace_tensor(std::string_view name, Array values) {
  const GgufTensorInfo* t = find_tensor(name);
  check(t != nullptr, "gguf", shards_.front().name(), ": no tensor named '", name, "' to replace");
  check(values.defined() && values.shape() == t->shape(), "gguf", shards_.front().name(), ": tensor '", name,
        "' is ", t->shape(), "; its replacement is ", values.defined() ? values.shape() : Dims{});
  replaced_.insert_or_assign(std::string(name), std::move(values));
}

GgufModel::TensorSource GgufModel::tensor_source(std::string_view name) const {
  auto it = index_.find(name);
  check(it != index_.end(), "gguf", shards_.front().name(), ": no tensor named '", name, "'");
  const GgufFile& shard = shards_[it->second.shard];
  check(shard.source() != nullptr, "gguf", shard.name(), ": tensor '", name, "' has no file to read from");
  return TensorSource{shard.source(), shard.tensor_offset(it->second.index), shard.tensors()[it->second.index].nbytes};
}

}  // namespace tempra::io
