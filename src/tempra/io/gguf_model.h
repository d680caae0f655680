// tempra/io/gguf_model.h: a GGUF model that may be split across several files.
//
// llama.cpp's gguf-split writes name-00001-of-00003.gguf, name-00002-of-00003.gguf, ...; every
// shard carries split.no (0-based) and split.count, the first also split.tensors.count and the
// model's metadata. GgufModel::open takes a single file or the first shard and loads the rest
// by name: metadata comes from the first shard, tensors from all of them (unique names across
// shards, in shard order). Each shard is a GgufFile with the reader's checks; shard numbering,
// counts and the total tensor count are checked too, and errors name the shard's path.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tempra/io/gguf_reader.h"

namespace tempra::io {

// The integer value of an integer-typed metadata value (u8 ... i64), or nullopt.
std::optional<int64_t> integer_value(const GgufValue& value);

// The path of shard `index` (0-based) of `count` next to `first`: prefix-%05d-of-%05d.gguf.
std::filesystem::path gguf_shard_path(const std::filesystem::path& first, int index, int count);

class GgufModel {
 public:
  // Opens every shard with `mapping` (gguf_reader.h).
  static GgufModel open(const std::filesystem::path& path, TensorMapping mapping = TensorMapping::whole_file);

  const GgufMetadata& metadata() const { return shards_.front().metadata(); }
  const std::vector<GgufFile>& shards() const { return shards_; }

  struct Location {
    size_t shard;
    size_t index;  // in shards()[shard].tensors()
  };
  // Every tensor, shard by shard, in file order.
  const std::vector<Location>& tensors() const { return order_; }
  const GgufTensorInfo& info(const Location& at) const { return shards_[at.shard].tensors()[at.index]; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  Array tensor(std::string_view name) const;  // zero-copy; throws if absent
  // The open file that holds `name` and where its bytes lie in it, for reads by offset; throws
  // if absent or if the shard was parsed from memory.
  struct TensorSource {
    std::shared_ptr<ReadableFile> file;
    uint64_t offset = 0, nbytes = 0;
  };
  TensorSource tensor_source(std::string_view name) const;

  // Makes tensor(name) return `values` instead of the file's: a LoRA adapter merged into the
  // weights at load (tempra/train/adapter.h). values must have the tensor's shape (any dtype);
  // find_tensor() and tensor_source() still describe the bytes in the file, so what reads through
  // them (streamed experts: ModelLoader::stacked_experts) does not see the replacement.
  void replace_tensor(std::string_view name, Array values);

 private:
  std::vector<GgufFile> shards_;
  std::vector<Location> order_;
  std::map<std::string, Location, std::less<>> index_;
  std::map<std::string, Array, std::less<>> replaced_;
};

}  // namespace tempra::io
