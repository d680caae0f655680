// tempra/io/gguf_reader.cpp: the GGUF parser. Layout from ggml/docs/gguf.md and ggml/src/gguf.cpp:
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv | n_kv x (string key, u32 type, value)
//   | n_tensors x (string name, u32 n_dims, n_dims x i64 ne, i32 ggml type, u64 offset)
//   | zero padding to the alignment | tensor data (each at data start + offset)
// A string is u64 length + bytes; an array value is u32 element type + u64 count + elements.
#include "tempra/io/gguf_reader.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "tempra/core/error.h"
#include "tempra/io/ggml_types.h"
#include "tempra/io/mapped_file.h"

namespace tempra::io {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace {

constexpr uint32_t kSmallestKv = 8 + 4 + 1;          // empty-key length, type, one-byte value
constexpr uint32_t kSmallestTensorInfo = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset
constexpr size_t kReserveCap = 4096;                 // never reserve more than this from a count

size_t fixed_size(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    case GgufType::string: return 8;   // the smallest encoding: an empty string's length
    case GgufType::array: return 12;   // the smallest encoding: element type + count
  }
  return 1;
}

// Thrown by Cursor when a read runs past the bytes at hand but not past the file: the header is
// longer than the prefix read so far (GgufFile::open with TensorMapping::per_tensor reads more).
struct HeaderIncomplete {
  uint64_t needed;  // the offset the parser wanted to reach
};

// Reads little-endian fields from the file, failing (never reading past the end) with the file
// name, the field and the offset when the bytes run out. `bytes` may be a prefix of a file of
// `file_size` bytes: counts and lengths are judged against the file, and a read past the prefix
// that the file could satisfy throws HeaderIncomplete.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, uint64_t file_size, const std::string& file)
      : bytes_(bytes), file_size_(file_size), file_(file) {}

  size_t pos() const { return pos_; }
  uint64_t remaining() const { return file_size_ - pos_; }

  template <class... Parts>
  [[noreturn]] void fail_at(const Parts&... parts) const {
    fail("gguf", file_, ": ", parts...);
  }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining())
      fail_at("truncated: ", what, " needs ", n, " bytes at offset ", pos_, ", only ", remaining(), " left");
    if (n > bytes_.size() - pos_) throw HeaderIncomplete{pos_ + n};
  }
  template <class T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(std::string_view what) {
    const auto length = read<uint64_t>(what);
    if (length > remaining())
      fail_at(what, " has length ", length, " at offset ", pos_ - 8, ", past the end of the file (", remaining(),
              " bytes left)");
    need(length, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return s;
  }
  template <class T>
  void read_into(std::vector<T>& out, uint64_t n) {  // caller has checked n * sizeof(T) <= remaining
    need(n * sizeof(T), "an array");
    out.resize(static_cast<size_t>(n));
    if (n == 0) return;  // an empty vector's data() may be null, which memcpy must not see
    std::memcpy(out.data(), bytes_.data() + pos_, static_cast<size_t>(n) * sizeof(T));
    pos_ += static_cast<size_t>(n) * sizeof(T);
  }

 private:
  std::span<const std::byte> bytes_;
  uint64_t file_size_;
  const std::string& file_;
  size_t pos_ = 0;
};

class Parser {
 public:
  Parser(std::span<const std::byte> bytes, uint64_t file_size, const std::string& file)
      : in_(bytes, file_size, file) {}

  void header(uint32_t& version, uint64_t& n_tensors, uint64_t& n_kv);
  GgufValue value(GgufType type, const std::string& key, int depth);
  GgufType value_type(const std::string& key, std::string_view what);
  GgufTensorInfo tensor_info(uint64_t index, uint32_t alignment);
  Cursor& in() { return in_; }

 private:
  template <class T>
  GgufArray fixed_array(uint64_t n) {
    std::vector<T> items;
    in_.read_into(items, n);
    return GgufArray{std::move(items)};
  }
  GgufArray array(const std::string& key, int depth);

  Cursor in_;
};

void Parser::header(uint32_t& version, uint64_t& n_tensors, uint64_t& n_kv) {
  if (in_.remaining() == 0) in_.fail_at("the file is empty");
  in_.need(4, "the magic");
  const auto magic = in_.read<std::array<unsigned char, 4>>("the magic");
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) {
    std::ostringstream hex;
    for (unsigned char c : magic) hex << ' ' << std::hex << std::setw(2) << std::setfill('0') << int(c);
    in_.fail_at("bad magic: expected 'GGUF' (47 47 55 46), found", hex.str());
  }
  version = in_.read<uint32_t>("the version");
  if (version == 1)
    in_.fail_at("GGUF version 1 is not supported (it used 32-bit counts); only versions 2 and 3 are");
  if (version != 0 && (version & 0xFFFF) == 0)
    in_.fail_at("version field 0x", std::hex, version, std::dec,
                " looks byte-swapped: big-endian GGUF files are not supported");
  if (version != 2 && version != 3) in_.fail_at("unsupported GGUF version ", version, " (supported: 2, 3)");
  n_tensors = in_.read<uint64_t>("the tensor count");
  n_kv = in_.read<uint64_t>("the metadata count");
  // Each entry takes at least this many bytes, so a count the file cannot hold is an error now,
  // before anything is reserved for it.
  if (n_kv > in_.remaining() / kSmallestKv)
    in_.fail_at("metadata count ", n_kv, " cannot fit in the ", in_.remaining(), " bytes left");
  if (n_tensors > in_.remaining() / kSmallestTensorInfo)
    in_.fail_at("tensor count ", n_tensors, " cannot fit in the ", in_.remaining(), " bytes left");
}

GgufType Parser::value_type(const std::string& key, std::string_view what) {
  const auto id = in_.read<uint32_t>(what);
  if (id >= kGgufTypeCount) in_.fail_at("metadata key '", key, "' has unknown ", what, " ", id);
  return static_cast<GgufType>(id);
}

GgufArray Parser::array(const std::string& key, int depth) {
  if (depth > kMaxArrayDepth)
    in_.fail_at("metadata key '", key, "' nests arrays deeper than ", kMaxArrayDepth, " levels");
  const GgufType element = value_type(key, "array element type");
  const auto n = in_.read<uint64_t>("array length");
  const size_t unit = fixed_size(element);
  if (n > in_.remaining() / unit)
    in_.fail_at("metadata key '", key, "' has an array of ", n, " ", type_name(element), " (", unit,
                "+ bytes each), more than the ", in_.remaining(), " bytes left");
  switch (element) {
    case GgufType::u8: return fixed_array<uint8_t>(n);
    case GgufType::i8: return fixed_array<int8_t>(n);
    case GgufType::u16: return fixed_array<uint16_t>(n);
    case GgufType::i16: return fixed_array<int16_t>(n);
    case GgufType::u32: return fixed_array<uint32_t>(n);
    case GgufType::i32: return fixed_array<int32_t>(n);
    case GgufType::f32: return fixed_array<float>(n);
    case GgufType::u64: return fixed_array<uint64_t>(n);
    case GgufType::i64: return fixed_array<int64_t>(n);
    case GgufType::f64: return fixed_array<double>(n);
    case GgufType::boolean: {
      std::vector<bool> items(static_cast<size_t>(n));
      for (uint64_t i = 0; i < n; ++i) {
        const auto b = in_.read<uint8_t>("bool");
        if (b > 1) in_.fail_at("metadata key '", key, "' item ", i, " is bool ", int(b), " (must be 0 or 1)");
        items[static_cast<size_t>(i)] = b != 0;
      }
      return GgufArray{std::move(items)};
    }
    case GgufType::string: {
      std::vector<std::string> items;
      items.reserve(static_cast<size_t>(std::min<uint64_t>(n, kReserveCap)));
      for (uint64_t i = 0; i < n; ++i) items.push_back(in_.read_string("string item of '" + key + "'"));
      return GgufArray{std::move(items)};
    }
    case GgufType::array: {
      std::vector<GgufArray> items;
      items.reserve(static_cast<size_t>(std::min<uint64_t>(n, kReserveCap)));
      for (uint64_t i = 0; i < n; ++i) items.push_back(array(key, depth + 1));
      return GgufArray{std::move(items)};
    }
  }
  in_.fail_at("unreachable array type");
}

GgufValue Parser::value(GgufType type, const std::string& key, int depth) {
  switch (type) {
    case GgufType::u8: return {in_.read<uint8_t>("a u8 value")};
    case GgufType::i8: return {in_.read<int8_t>("an i8 value")};
    case GgufType::u16: return {in_.read<uint16_t>("a u16 value")};
    case GgufType::i16: return {in_.read<int16_t>("an i16 value")};
    case GgufType::u32: return {in_.read<uint32_t>("a u32 value")};
    case GgufType::i32: return {in_.read<int32_t>("an i32 value")};
    case GgufType::f32: return {in_.read<float>("an f32 value")};
    case GgufType::u64: return {in_.read<uint64_t>("a u64 value")};
    case GgufType::i64: return {in_.read<int64_t>("an i64 value")};
    case GgufType::f64: return {in_.read<double>("an f64 value")};
    case GgufType::boolean: {
      const auto b = in_.read<uint8_t>("a bool value");
      if (b > 1) in_.fail_at("metadata key '", key, "' is bool ", int(b), " (must be 0 or 1)");
      return {b != 0};
    }
    case GgufType::string: return {in_.read_string("the value of '" + key + "'")};
    case GgufType::array: return {array(key, depth + 1)};
  }
  in_.fail_at("unreachable value type");
}

std::string tensor_label(uint64_t index, const std::string& name) {
  return "tensor " + std::to_string(index) + " '" + name + "'";
}

GgufTensorInfo Parser::tensor_info(uint64_t index, uint32_t alignment) {
  GgufTensorInfo t;
  t.name = in_.read_string("the name of tensor " + std::to_string(index));
  const std::string label = tensor_label(index, t.name);
  if (t.name.empty()) in_.fail_at("tensor ", index, " has an empty name");
  t.n_dims = in_.read<uint32_t>("n_dims");
  if (t.n_dims > kGgufMaxDims) in_.fail_at(label, " has ", t.n_dims, " dims (max ", kGgufMaxDims, ")");
  int64_t numel = 1;
  for (uint32_t d = 0; d < t.n_dims; ++d) {
    t.ne[d] = in_.read<int64_t>("a dimension");
    if (t.ne[d] < 0) in_.fail_at(label, " dimension ", d, " is ", t.ne[d], " (negative)");
  }
  // The product must fit with zero extents counted as 1 too: a shape's product and strides are
  // computed in other orders later (Dims::product runs outermost first), so [0, 2^40, 2^40]
  // would overflow there although its element count is 0.
  int64_t nonzero_product = 1;
  for (uint32_t d = 0; d < t.n_dims; ++d) {
    if (__builtin_mul_overflow(numel, t.ne[d], &numel) ||
        __builtin_mul_overflow(nonzero_product, std::max<int64_t>(t.ne[d], 1), &nonzero_product))
      in_.fail_at(label, " element count of ne [", t.ne[0], ", ", t.ne[1], ", ", t.ne[2], ", ", t.ne[3],
                  "] overflows 64 bits");
  }
  t.ggml_type = in_.read<int32_t>("the ggml type");
  const std::optional<DType> dtype = dtype_for_ggml_type(t.ggml_type);
  if (!dtype)
    in_.fail_at(label, " has ggml type ", t.ggml_type, " (", ggml_type_name(t.ggml_type),
                "), which tempra does not support");
  t.dtype = *dtype;
  const DTypeInfo& info = t.dtype.info();
  const auto block_elems = static_cast<int64_t>(info.block_elems);
  if (t.ne[0] % block_elems != 0)
    in_.fail_at(label, " row length ne[0] = ", t.ne[0], " is not a multiple of the ", info.name, " block size ",
                block_elems);
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel / block_elems), static_cast<uint64_t>(info.block_bytes),
                             &nbytes) ||
      nbytes > static_cast<uint64_t>(INT64_MAX))
    in_.fail_at(label, " byte size (", numel, " ", info.name, " elements) overflows");
  t.nbytes = nbytes;
  t.offset = in_.read<uint64_t>("the tensor offset");
  if (t.offset % alignment != 0)
    in_.fail_at(label, " offset ", t.offset, " is not a multiple of the alignment ", alignment);
  return t;
}

void check_tokenizer_types(const GgufMetadata& meta, Cursor& in) {
  struct Expected {
    const char* key;
    GgufType element;
  };
  static constexpr Expected kExpected[] = {
      {"tokenizer.ggml.tokens", GgufType::string},
      {"tokenizer.ggml.scores", GgufType::f32},
      {"tokenizer.ggml.token_type", GgufType::i32},
      {"tokenizer.ggml.merges", GgufType::string},
  };
  for (const Expected& e : kExpected) {
    const GgufValue* v = meta.find(e.key);
    if (!v) continue;
    const auto* a = std::get_if<GgufArray>(&v->value);
    if (!a || a->element_type() != e.element)
      in.fail_at("metadata key '", e.key, "' is ", describe_type(*v), ", expected array[", type_name(e.element), "]");
  }
  const GgufValue* tokens = meta.find("tokenizer.ggml.tokens");
  if (!tokens) return;
  const size_t n_tokens = std::get<GgufArray>(tokens->value).size();
  for (const char* key : {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
    const GgufValue* v = meta.find(key);
    if (v && std::get<GgufArray>(v->value).size() != n_tokens)
      in.fail_at("metadata key '", key, "' has ", std::get<GgufArray>(v->value).size(), " entries but there are ",
                 n_tokens, " tokens");
  }
}

uint32_t read_alignment(const GgufMetadata& meta, Cursor& in) {
  const GgufValue* v = meta.find("general.alignment");
  if (!v) return kGgufDefaultAlignment;
  if (!v->is<uint32_t>()) in.fail_at("general.alignment is ", describe_type(*v), ", expected u32");
  const uint32_t a = std::get<uint32_t>(v->value);
  if (!std::has_single_bit(a)) in.fail_at("general.alignment ", a, " is not a nonzero power of two");
  return a;
}

}  // namespace

Dims GgufTensorInfo::shape() const {
  Dims s;
  for (int d = static_cast<int>(n_dims) - 1; d >= 0; --d) s.push_back(ne[static_cast<size_t>(d)]);
  return s;
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (uint32_t d = 0; d < n_dims; ++d) n *= ne[d];
  return n;
}

GgufFile GgufFile::open(const std::filesystem::path& path, TensorMapping mapping) {
  std::shared_ptr<ReadableFile> source = ReadableFile::open(path);
  if (mapping == TensorMapping::whole_file) {
    // The descriptor just opened maps the whole file too (one open, one stat).
    std::shared_ptr<MappedFile> whole = source->map(0, static_cast<size_t>(source->size()));
    whole->will_need(0, 1 << 20);  // the header is parsed now; tensor pages load when touched
    const std::span<const std::byte> bytes = whole->bytes();
    GgufFile file = parse_prefix(bytes, bytes.size(), path.string(), std::move(whole));
    file.source_ = std::move(source);
    return file;
  }
  // Only the header is read; each tensor is mapped when asked for. The header's length is known
  // only once it is parsed, so read a prefix and double it until the parse needs no more.
  // A header larger than any real model's (tokenizers of 262k tokens take ~10 MiB) is refused
  // before a buffer of its size is made.
  constexpr uint64_t kMaxHeader = uint64_t{256} << 20;
  uint64_t length = std::min<uint64_t>(source->size(), uint64_t{1} << 20);
  for (;;) {
    auto header = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(length));
    source->read(0, *header);
    try {
      GgufFile file = parse_prefix(*header, source->size(), path.string(), header);
      file.source_ = std::move(source);
      return file;
    } catch (const HeaderIncomplete& more) {
      if (more.needed > kMaxHeader)
        fail("gguf", path.string(), ": the header runs past ", kMaxHeader >> 20, " MiB (to offset ", more.needed,
             "); files opened with their tensors mapped one at a time take headers up to that size");
      length = std::min({source->size(), std::max(length * 2, more.needed), kMaxHeader});
    }
  }
}

GgufFile GgufFile::parse(std::span<const std::byte> bytes, std::string name, std::shared_ptr<const void> owner) {
  try {
    return parse_prefix(bytes, bytes.size(), std::move(name), std::move(owner));
  } catch (const HeaderIncomplete&) {
    fail("gguf: unreachable: a whole file's parse asked for more bytes");
  }
}

GgufFile GgufFile::parse_prefix(std::span<const std::byte> bytes, uint64_t file_size, std::string name,
                                std::shared_ptr<const void> owner) {
  GgufFile file;
  file.name_ = std::move(name);
  file.bytes_ = bytes;
  file.file_size_ = file_size;
  file.owner_ = std::move(owner);
  Parser parser(bytes, file_size, file.name_);
  Cursor& in = parser.in();

  uint64_t n_tensors = 0, n_kv = 0;
  parser.header(file.version_, n_tensors, n_kv);

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = in.read_string("the key of metadata entry " + std::to_string(i));
    if (key.empty()) in.fail_at("metadata entry ", i, " has an empty key");
    if (file.metadata_.contains(key)) in.fail_at("duplicate metadata key '", key, "' (entry ", i, ")");
    const GgufType type = parser.value_type(key, "value type");
    GgufValue value = parser.value(type, key, 0);
    file.metadata_.add(std::move(key), std::move(value));
  }
  file.alignment_ = read_alignment(file.metadata_, in);
  check_tokenizer_types(file.metadata_, in);

  file.tensors_.reserve(static_cast<size_t>(std::min<uint64_t>(n_tensors, kReserveCap)));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t = parser.tensor_info(i, file.alignment_);
    if (file.tensor_index_.contains(t.name))
      in.fail_at("duplicate tensor name '", t.name, "' (tensors ", file.tensor_index_.at(t.name), " and ", i, ")");
    file.tensor_index_.emplace(t.name, file.tensors_.size());
    file.tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment (at most alignment - 1 bytes on).
  const uint64_t end_of_infos = in.pos();
  file.data_offset_ = (end_of_infos + file.alignment_ - 1) / file.alignment_ * file.alignment_;
  const uint64_t size = file_size;
  if (!file.tensors_.empty() && file.data_offset_ > size)
    in.fail_at("truncated: the data section would start at offset ", file.data_offset_, ", past the end (", size,
               " bytes)");
  const uint64_t data_size = file.tensors_.empty() ? 0 : size - file.data_offset_;
  for (size_t i = 0; i < file.tensors_.size(); ++i) {
    const GgufTensorInfo& t = file.tensors_[i];
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      in.fail_at(tensor_label(i, t.name), " data [", t.offset, ", +", t.nbytes, ") at file offset ",
                 file.data_offset_, " + ", t.offset, " extends past the end of the file (", size,
                 " bytes): truncated data");
  }
  // No two tensors may share bytes: sort the non-empty ones by offset and compare neighbours.
  std::vector<size_t> order;
  for (size_t i = 0; i < file.tensors_.size(); ++i)
    if (file.tensors_[i].nbytes > 0) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return file.tensors_[a].offset < file.tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& prev = file.tensors_[order[k - 1]];
    const GgufTensorInfo& cur = file.tensors_[order[k]];
    if (cur.offset < prev.offset + prev.nbytes)
      in.fail_at("the data of ", tensor_label(order[k - 1], prev.name), " [", prev.offset, ", ",
                 prev.offset + prev.nbytes, ") and ", tensor_label(order[k], cur.name), " [", cur.offset, ", ",
                 cur.offset + cur.nbytes, ") overlap");
  }
  return file;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufFile::checked_info(size_t index) const {
  check(index < tensors_.size(), "gguf", name_, ": tensor index ", index, " out of range (", tensors_.size(),
        " tensors)");
  return tensors_[index];
}

uint64_t GgufFile::tensor_offset(size_t index) const { return data_offset_ + checked_info(index).offset; }

bool GgufFile::in_memory(const GgufTensorInfo& t) const { return data_offset_ + t.offset + t.nbytes <= bytes_.size(); }

std::span<const std::byte> GgufFile::tensor_bytes(size_t index) const {
  const GgufTensorInfo& t = checked_info(index);
  check(in_memory(t), "gguf", name_, ": tensor '", t.name,
        "' is not in memory (the file was opened with its tensors mapped one at a time)");
  return bytes_.subspan(static_cast<size_t>(data_offset_ + t.offset), static_cast<size_t>(t.nbytes));
}

Array GgufFile::tensor(size_t index) const {
  const GgufTensorInfo& t = checked_info(index);
  const Dims shape = t.shape();
  if (t.nbytes == 0) return Array(Storage::allocate(0, nullptr), t.dtype, shape, contiguous_strides(shape), 0);
  if (!in_memory(t) && source_ != nullptr) {
    // TensorMapping::per_tensor: this tensor's own mapping, released with its last view.
    std::shared_ptr<MappedFile> mapping = source_->map(tensor_offset(index), static_cast<size_t>(t.nbytes));
    std::byte* data = mapping->data();
    auto storage = Storage::borrow(data, static_cast<size_t>(t.nbytes), std::move(mapping));
    return Array(std::move(storage), t.dtype, shape, contiguous_strides(shape), 0);
  }
  const std::span<const std::byte> data = tensor_bytes(index);
  check(owner_ != nullptr, "gguf", name_, ": tensors need an owner that keeps the bytes alive");
  // The mapping is copy-on-write (mapped_file.h), so a writable pointer is safe to hand out.
  auto storage = Storage::borrow(const_cast<std::byte*>(data.data()), data.size(), owner_);
  return Array(std::move(storage), t.dtype, shape, contiguous_strides(shape), 0);
}

Array GgufFile::tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  check(it != tensor_index_.end(), "gguf", name_, ": no tensor named '", name, "'");
  return tensor(it->second);
}

}  // namespace tempra::io
