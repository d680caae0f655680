// tempra/io/gguf_writer.h: writing GGUF files.
//
// Contract: a GgufWriter collects metadata (in insertion order) and tensors (in insertion order,
// each with its ggml type, ne and bytes), then write() emits
//   header | metadata | tensor infos | zero padding to the alignment | tensor data
// into <path>.tmp-<pid> and renames it into place, so a reader never sees a half-written file.
// The layout is ggml's (gguf_write_to_file): the alignment is general.alignment (a u32 power of
// two) or 32; a tensor without an explicit offset goes at the end of the previous one, rounded
// up to the alignment; every gap and the tail up to the next multiple of the alignment are zeros.
//
// GgufWriter::from(file) re-emits a file read from disk byte-identically when its padding is
// zeros: it keeps the version, key order, tensor order, the stored n_dims, every offset and the
// file's length (when that length is between the end of the content and the next alignment).
// Tensor bytes are not copied into the writer: it keeps them alive (keep_alive) until written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_value.h"

namespace tempra::io {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3);
  // Re-emits `file`: same version, metadata, tensor infos, offsets and length.
  static GgufWriter from(const GgufFile& file);

  GgufMetadata& metadata() { return metadata_; }
  const GgufMetadata& metadata() const { return metadata_; }

  // A tensor of ggml type `ggml_type` with extents `ne`, innermost first (ggml order; at most 4);
  // `data` must hold exactly its bytes and stay valid until written (or be kept by keep_alive).
  // `offset` pins its position in the data section (a multiple of the alignment).
  void add_tensor(std::string name, int32_t ggml_type, std::span<const int64_t> ne, std::span<const std::byte> data,
                  std::shared_ptr<const void> keep_alive = nullptr, std::optional<uint64_t> offset = std::nullopt);
  // A contiguous Array; its shape is reversed into ne, and its storage is kept alive.
  void add_tensor(std::string name, const Array& array);

  // The whole file in memory (tests, small files).
  std::vector<std::byte> to_bytes() const;
  // Writes to `path` atomically (temporary file + rename); throws tempra::Error on I/O failure.
  void write(const std::filesystem::path& path) const;
  // Writes the file into `file` from its current position (`name` names it in errors): for a
  // writer that owns the file, such as a write_atomically body that goes on to fill in the
  // tensor data (llm/model/synth.cpp).
  void write(std::FILE* file, const std::string& name) const;

 private:
  struct Tensor {
    std::string name;
    uint32_t n_dims;
    std::array<int64_t, kGgufMaxDims> ne;
    int32_t ggml_type;
    std::span<const std::byte> data;
    std::shared_ptr<const void> keep_alive;
    std::optional<uint64_t> offset;
  };
  struct Layout;
  Layout layout() const;
  template <class Sink>
  void emit(Sink& sink) const;

  uint32_t version_;
  GgufMetadata metadata_;
  std::vector<Tensor> tensors_;
  std::optional<uint64_t> file_size_;  // from(): the source's length
};

}  // namespace tempra::io
