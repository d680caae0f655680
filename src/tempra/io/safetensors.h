// tempra/io/safetensors.h: reading and writing safetensors files (Hugging Face's format).
//
// The format (https://github.com/huggingface/safetensors, "Format" in its README): an 8-byte
// little-endian header size N, N bytes of JSON, then the data. The JSON is one object: each
// tensor name maps to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets
// relative to the start of the data, row-major, little-endian), and an optional "__metadata__"
// maps string keys to string values. Files written here load with safetensors' own
// `safetensors.torch.load_file` / `safe_open`, and files it writes load here.
//
// Contract, reading: SafetensorsFile::open maps the file (mapped_file.h) and parses it; parse()
// parses bytes already in memory. The header is validated strictly, as the reference Rust
// implementation does, before anything is used, and any violation throws tempra::Error naming
// the file and the field, e.g.
//   [safetensors] ckpt.safetensors: tensor 'fc1.weight': shape [4, 3] of F32 needs 48 bytes, data_offsets span 40
// Checked: the header size against the file (and a 100 MB cap, the reference's), the JSON's
// syntax (strict: well-formed UTF-8, no trailing commas, no duplicate keys, no unknown fields,
// valid escapes and surrogate pairs), every field's type, dtype names, non-negative extents whose product and
// byte size fit in 63 bits, begin <= end, and that the tensors' byte ranges tile the data
// section exactly: sorted by offset they start at 0, never overlap, leave no holes and end at
// the end of the file (the reference rejects a file that does not). A header padded with
// trailing spaces (the reference pads to 8 bytes) is accepted.
// Tensors come back zero-copy: an Array over the mapping, which it keeps alive. A tensor whose
// address is not a multiple of its element size (legal in the format: offsets are unaligned)
// is copied into a fresh buffer instead, since an unaligned typed load is undefined behaviour.
//
// Contract, writing: write_safetensors writes the tensors in the order given, packed with no
// padding between them, after a header padded with spaces to a multiple of 8 bytes. Each array
// is written in row-major order whatever its strides. Names must be unique, non-empty, valid
// UTF-8 (as metadata must be) and not "__metadata__"; dtypes must have a safetensors name (f32, f64, f16, bf16, i8, u8, i16, i32,
// i64, bool; block-quantized dtypes have none). The file is written to a temporary name beside
// the target, flushed and renamed into place, so a reader never sees a half-written file and a
// failed write leaves any previous file intact.
#pragma once

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

namespace tempra::io {

inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;  // the reference's MAX_HEADER_SIZE

struct SafetensorsTensorInfo {
  std::string name;
  DType dtype;
  Dims shape;
  uint64_t begin = 0;  // data_offsets, relative to the start of the data section
  uint64_t end = 0;
  uint64_t nbytes() const { return end - begin; }
};

// The safetensors dtype name of `dtype` ("F32", "BF16", "BOOL", ...); throws if it has none.
std::string_view safetensors_dtype_name(DType dtype);

class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::filesystem::path& path);
  // Parses bytes in memory; `name` is used in error messages; `owner` keeps `bytes` valid for
  // as long as tensors handed out by tensor() live.
  static SafetensorsFile parse(std::span<const std::byte> bytes, std::string name, std::shared_ptr<const void> owner);

  const std::string& name() const { return name_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute: 8 + header size
  // Tensors in the order the header lists them.
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsTensorInfo* find(std::string_view name) const;  // null if absent

  // The tensor's bytes in the file (row-major, little-endian); throws if the name is absent.
  std::span<const std::byte> tensor_bytes(std::string_view name) const;
  // A contiguous Array over the tensor (zero-copy where aligned); throws if the name is absent.
  Array tensor(std::string_view name) const;

 private:
  SafetensorsFile() = default;

  std::string name_;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

struct NamedArray {
  std::string name;
  Array value;
};

// The whole file in memory (what write_safetensors writes).
std::vector<std::byte> safetensors_bytes(std::span<const NamedArray> tensors,
                                         const std::map<std::string, std::string>& metadata = {});
// Writes the file atomically (temporary file, flush, rename).
void write_safetensors(const std::filesystem::path& path, std::span<const NamedArray> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace tempra::io
