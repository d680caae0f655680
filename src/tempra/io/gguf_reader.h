// tempra/io/gguf_reader.h: reading GGUF files (v2, v3) into metadata and zero-copy tensors.
//
// Contract: GgufFile::open maps the whole file (mapped_file.h) and parses it, or, with
// TensorMapping::per_tensor, reads only the header and maps each tensor when tensor() asks for
// it (so the address space holds only the tensors in use: expert streaming, llm/model/
// expert_cache.h); GgufFile::parse parses bytes already in memory (the fuzzer's entry point;
// open() goes through the same parser). Either one
// checks every count, length, dimension, product, size and offset against overflow and against
// the bytes actually present before using it, and throws tempra::Error naming the file and the
// field on any violation, e.g.
//   [gguf] model.gguf: tensor 3 'blk.0.attn_q.weight' has 5 dims (max 4)
// It never allocates from an unchecked count. Accepted: little-endian GGUF v2 and v3 (the
// same layout); v1 (32-bit counts) and big-endian files are rejected with a message saying so.
//
// What is enforced, beyond the byte layout:
//   - metadata keys are unique and non-empty; arrays nest at most kMaxArrayDepth deep; a bool is 0 or 1;
//   - general.alignment, if present, is a u32 nonzero power of two (default 32);
//   - tokenizer.ggml.{tokens,merges} are string arrays, .scores an f32 array, .token_type an i32
//     array, and scores/token_type have as many entries as tokens;
//   - tensor names are unique and non-empty, n_dims <= 4, extents >= 0 (0 is allowed, as in
//     ggml), the element count and byte size fit in 63 bits, the ggml type maps to a tempra
//     dtype, a block type's row length is a multiple of its block, the offset is a multiple of
//     the alignment, the data lies inside the file, and no two tensors' bytes overlap.
//
// Dimension order: GGUF stores extents innermost first (ne[0] is the row length, as in ggml).
// tempra shapes are row-major, outermost first, so shape() is ne reversed: a GGUF tensor with
// ne = {4096, 11008} is the Array of shape [11008, 4096].
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_value.h"

namespace tempra::io {

inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr int kGgufMaxDims = 4;
inline constexpr int kMaxArrayDepth = 8;

struct GgufTensorInfo {
  std::string name;
  uint32_t n_dims = 0;                 // as stored (ggml writes at least 1)
  std::array<int64_t, kGgufMaxDims> ne{1, 1, 1, 1};  // innermost first; entries >= n_dims are 1
  int32_t ggml_type = 0;
  DType dtype;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t nbytes = 0;

  // tempra's shape: ne[0..n_dims) reversed, outermost first.
  Dims shape() const;
  int64_t numel() const;
};

class ReadableFile;

// How GgufFile::open makes tensors addressable: one mapping of the whole file, or a mapping per
// tensor made by tensor() (each view keeps its own mapping alive).
enum class TensorMapping : uint8_t { whole_file, per_tensor };

class GgufFile {
 public:
  // Maps (or, per_tensor, reads the header of) and parses `path`. Tensors returned by tensor()
  // keep their mapping alive.
  static GgufFile open(const std::filesystem::path& path, TensorMapping mapping = TensorMapping::whole_file);
  // Parses bytes in memory; `name` is used in error messages. Tensors point into `bytes`, which
  // `owner` must keep valid (pass a no-op-deleter shared_ptr if the caller guarantees it).
  // Tensor views of a read-only buffer must not be written through.
  static GgufFile parse(std::span<const std::byte> bytes, std::string name, std::shared_ptr<const void> owner);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute, aligned
  uint64_t file_size() const { return file_size_; }
  const GgufMetadata& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;  // null if absent

  // A zero-copy, contiguous Array over the tensor's bytes; throws if the name is absent.
  Array tensor(std::string_view name) const;
  Array tensor(size_t index) const;
  // The tensor's raw bytes inside the file; throws for a per_tensor file (use tensor()).
  std::span<const std::byte> tensor_bytes(size_t index) const;
  // Where the tensor's bytes start in the file (data_offset() + its offset).
  uint64_t tensor_offset(size_t index) const;
  // The open file, for reads by offset (null for a file made by parse()).
  const std::shared_ptr<ReadableFile>& source() const { return source_; }

 private:
  GgufFile() = default;
  // parse() over the first bytes.size() bytes of a file of file_size bytes.
  static GgufFile parse_prefix(std::span<const std::byte> bytes, uint64_t file_size, std::string name,
                               std::shared_ptr<const void> owner);
  const GgufTensorInfo& checked_info(size_t index) const;
  // Whether the tensor's bytes lie in bytes_ (always for a whole file; per_tensor: the header's).
  bool in_memory(const GgufTensorInfo& t) const;
  std::string name_;
  std::span<const std::byte> bytes_;
  uint64_t file_size_ = 0;
  std::shared_ptr<const void> owner_;
  std::shared_ptr<ReadableFile> source_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  GgufMetadata metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace tempra::io
