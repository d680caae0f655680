// tempra/io/safetensors.cpp: the header parser is a small strict JSON reader written for this one
// schema (rather than a general JSON library): it keeps io free of third-party dependencies and
// lets every rejection name the field. The checks follow safetensors' Rust `Metadata::validate`.
#include "tempra/io/safetensors.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "tempra/core/error.h"
#include "tempra/core/storage.h"
#include "tempra/core/utf8.h"
#include "tempra/io/atomic_write.h"
#include "tempra/io/mapped_file.h"

namespace tempra::io {

namespace {

constexpr const char* kOp = "safetensors";

struct DtypeName {
  DType dtype;
  std::string_view name;
};
constexpr std::array<DtypeName, 10> kDtypeNames{{{DType::f64, "F64"},
                                                 {DType::f32, "F32"},
                                                 {DType::f16, "F16"},
                                                 {DType::bf16, "BF16"},
                                                 {DType::i64, "I64"},
                                                 {DType::i32, "I32"},
                                                 {DType::i16, "I16"},
                                                 {DType::i8, "I8"},
                                                 {DType::u8, "U8"},
                                                 {DType::boolean, "BOOL"}}};

// The safetensors dtypes tempra has no dtype for: named in the error so it says "unsupported"
// rather than "unknown".
constexpr std::array<std::string_view, 7> kForeignDtypes{"U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4"};

// ---- a strict JSON reader for the header ----

class JsonReader {
 public:
  JsonReader(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  [[noreturn]] void error(const std::string& what) const {
    fail(kOp, file_, ": header JSON: ", what, " at byte ", pos_, " of the header");
  }

  void skip_ws() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool at_end() {
    skip_ws();
    return pos_ >= text_.size();
  }
  char peek() {
    skip_ws();
    if (pos_ >= text_.size()) error("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) error(std::string("expected '") + c + "', found '" + printable(text_[pos_]) + "'");
    ++pos_;
  }
  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) error("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) error("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u':
          append_utf8(out, code_point());
          break;
        default:
          error(std::string("invalid escape '\\") + printable(e) + "'");
      }
    }
  }

  // A non-negative integer without sign, fraction or exponent (what shapes and offsets are).
  uint64_t unsigned_integer(const std::string& field) {
    skip_ws();
    const size_t start = pos_;
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
      error(field + " must be a non-negative integer");
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9')
      error(field + " has a leading zero");
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
        pos_ = start;
        error(field + " does not fit in 64 bits");
      }
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
      error(field + " must be an integer");
    return v;
  }

 private:
  static std::string printable(char c) {
    if (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
    return buf;
  }
  uint32_t hex4() {
    if (pos_ + 4 > text_.size()) error("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<uint32_t>(h - 'A' + 10);
      else
        error("invalid hex digit in a \\u escape");
    }
    return v;
  }
  uint32_t code_point() {
    const uint32_t u = hex4();
    if (u >= 0xdc00 && u <= 0xdfff) error("lone low surrogate in a \\u escape");
    if (u < 0xd800 || u > 0xdbff) return u;
    if (pos_ + 2 > text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
      error("high surrogate without its low half");
    pos_ += 2;
    const uint32_t low = hex4();
    if (low < 0xdc00 || low > 0xdfff) error("high surrogate without its low half");
    return 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
  }
  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  std::string_view text_;
  const std::string& file_;
  size_t pos_ = 0;
};

// Reads `{ "k": v, ... }`, calling on_member(key) with the reader positioned at the value;
// rejects duplicate keys.
template <class OnMember>
void read_object(JsonReader& json, const std::string& what, OnMember on_member) {
  json.expect('{');
  std::set<std::string> seen;
  if (json.consume('}')) return;
  do {
    std::string key = json.string();
    if (!seen.insert(key).second) json.error(what + " has the key '" + key + "' twice");
    json.expect(':');
    on_member(key);
  } while (json.consume(','));
  json.expect('}');
}

std::string single_quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  out.append(s);
  out += '\'';
  return out;
}

DType parse_dtype(std::string_view name, const std::string& file, const std::string& tensor) {
  for (const DtypeName& d : kDtypeNames)
    if (d.name == name) return d.dtype;
  for (std::string_view f : kForeignDtypes)
    if (f == name) fail(kOp, file, ": tensor ", single_quoted(tensor), ": dtype ", name, " is not supported by tempra");
  fail(kOp, file, ": tensor ", single_quoted(tensor), ": unknown dtype ", single_quoted(name));
}

SafetensorsTensorInfo parse_tensor(JsonReader& json, const std::string& file, const std::string& name) {
  SafetensorsTensorInfo info;
  info.name = name;
  bool has_dtype = false, has_shape = false, has_offsets = false;
  const std::string where = "tensor '" + name + "'";
  read_object(json, where, [&](const std::string& key) {
    if (key == "dtype") {
      info.dtype = parse_dtype(json.string(), file, name);
      has_dtype = true;
    } else if (key == "shape") {
      json.expect('[');
      std::vector<int64_t> extents;
      if (!json.consume(']')) {
        do {
          const uint64_t e = json.unsigned_integer(where + " shape[" + std::to_string(extents.size()) + "]");
          if (e > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            fail(kOp, file, ": ", where, ": shape[", extents.size(), "] = ", e, " does not fit in 63 bits");
          extents.push_back(static_cast<int64_t>(e));
          if (extents.size() > static_cast<size_t>(kMaxRank))
            fail(kOp, file, ": ", where, ": shape has more than ", kMaxRank, " dims");
        } while (json.consume(','));
        json.expect(']');
      }
      // The element count must fit before Dims multiplies it out.
      uint64_t count = 1;
      for (int64_t e : extents) {
        if (e != 0 && count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(e))
          fail(kOp, file, ": ", where, ": the element count of its shape does not fit in 63 bits");
        count *= static_cast<uint64_t>(e);
      }
      info.shape = Dims(extents.begin(), extents.end());
      has_shape = true;
    } else if (key == "data_offsets") {
      json.expect('[');
      info.begin = json.unsigned_integer(where + " data_offsets[0]");
      json.expect(',');
      info.end = json.unsigned_integer(where + " data_offsets[1]");
      if (json.peek() != ']') json.error(where + " data_offsets must hold exactly 2 integers");
      json.expect(']');
      has_offsets = true;
    } else {
      fail(kOp, file, ": ", where, ": unknown field ", single_quoted(key), " (expected dtype, shape, data_offsets)");
    }
  });
  if (!has_dtype) fail(kOp, file, ": ", where, ": missing field 'dtype'");
  if (!has_shape) fail(kOp, file, ": ", where, ": missing field 'shape'");
  if (!has_offsets) fail(kOp, file, ": ", where, ": missing field 'data_offsets'");
  if (info.begin > info.end)
    fail(kOp, file, ": ", where, ": data_offsets [", info.begin, ", ", info.end, "] end before they begin");
  const uint64_t count = static_cast<uint64_t>(info.shape.product());
  const uint64_t element = info.dtype.element_size();
  if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / element)
    fail(kOp, file, ": ", where, ": the byte size of its shape does not fit in 63 bits");
  if (count * element != info.nbytes())
    fail(kOp, file, ": ", where, ": shape ", info.shape, " of ", safetensors_dtype_name(info.dtype), " needs ",
         count * element, " bytes, data_offsets span ", info.nbytes());
  return info;
}

// Writes `s` as a JSON string (escaping what JSON requires; other bytes pass through as UTF-8).
void put_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Calls emit(bytes) for the array's elements in row-major order, one contiguous run at a time.
template <class Emit>
void for_each_run(const Array& a, Emit emit) {
  const size_t element = a.dtype().element_size();
  const auto* base = static_cast<const std::byte*>(a.raw_data());
  if (a.numel() == 0) return;
  if (a.is_contiguous()) {
    emit(base, a.nbytes());
    return;
  }
  const int rank = a.rank();
  const Dims& shape = a.shape();
  const Dims& strides = a.strides();
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  const int64_t rows = a.numel() / shape[rank - 1];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (int d = 0; d < rank - 1; ++d) offset += index[static_cast<size_t>(d)] * strides[d];
    const int64_t inner = shape[rank - 1], stride = strides[rank - 1];
    for (int64_t i = 0; i < inner; ++i) emit(base + (offset + i * stride) * static_cast<int64_t>(element), element);
    for (int d = rank - 2; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < shape[d]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
}

struct Layout {
  std::string header;  // padded
  std::vector<uint64_t> begins;
  uint64_t data_bytes = 0;
};

Layout layout(std::span<const NamedArray> tensors, const std::map<std::string, std::string>& metadata) {
  Layout l;
  std::set<std::string_view> names;
  std::string& h = l.header;
  h += '{';
  bool first = true;
  for (const auto& [key, value] : metadata) {
    check(!invalid_utf8_at(key), kOp, "metadata key ", single_quoted(key), " is not valid UTF-8");
    check(!invalid_utf8_at(value), kOp, "metadata value of ", single_quoted(key), " is not valid UTF-8");
  }
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    for (const auto& [key, value] : metadata) {
      if (!first) h += ',';
      first = false;
      put_json_string(h, key);
      h += ':';
      put_json_string(h, value);
    }
    h += '}';
  }
  for (const NamedArray& t : tensors) {
    check(!t.name.empty(), kOp, "a tensor name is empty");
    check(!invalid_utf8_at(t.name), kOp, "tensor name ", single_quoted(t.name),
          " is not valid UTF-8");
    check(t.name != "__metadata__", kOp, "a tensor may not be named '__metadata__'");
    check(names.insert(t.name).second, kOp, "tensor name ", single_quoted(t.name), " appears twice");
    check(t.value.defined(), kOp, "tensor ", single_quoted(t.name), " is an empty array");
    const std::string_view dtype = safetensors_dtype_name(t.value.dtype());
    const uint64_t nbytes = t.value.nbytes();
    if (!metadata.empty() || !first) h += ',';
    first = false;
    put_json_string(h, t.name);
    h += ":{\"dtype\":\"";
    h += dtype;
    h += "\",\"shape\":[";
    for (int d = 0; d < t.value.rank(); ++d) {
      if (d) h += ',';
      h += std::to_string(t.value.shape()[d]);
    }
    h += "],\"data_offsets\":[";
    h += std::to_string(l.data_bytes);
    h += ',';
    h += std::to_string(l.data_bytes + nbytes);
    h += "]}";
    l.begins.push_back(l.data_bytes);
    l.data_bytes += nbytes;
  }
  h += '}';
  // The reference pads with spaces so the data starts 8-byte aligned.
  while ((8 + h.size()) % 8 != 0) h += ' ';
  return l;
}

template <class Sink>
void emit(std::span<const NamedArray> tensors, const Layout& l, Sink& sink) {
  uint64_t n = l.header.size();
  std::array<std::byte, 8> size_bytes;
  for (int i = 0; i < 8; ++i) size_bytes[static_cast<size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  sink(size_bytes.data(), 8);
  sink(reinterpret_cast<const std::byte*>(l.header.data()), l.header.size());
  for (const NamedArray& t : tensors) for_each_run(t.value, [&](const std::byte* p, size_t bytes) { sink(p, bytes); });
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const DtypeName& d : kDtypeNames)
    if (d.dtype == dtype) return d.name;
  fail(kOp, "dtype ", dtype.name(), " has no safetensors name");
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  auto mapped = MappedFile::open(path, kOp);
  const std::span<const std::byte> bytes = mapped->bytes();
  return parse(bytes, path.string(), std::move(mapped));
}

SafetensorsFile SafetensorsFile::parse(std::span<const std::byte> bytes, std::string name,
                                       std::shared_ptr<const void> owner) {
  SafetensorsFile f;
  f.name_ = std::move(name);
  f.bytes_ = bytes;
  f.owner_ = std::move(owner);
  const std::string& file = f.name_;

  if (bytes.size() < 8) fail(kOp, file, ": ", bytes.size(), " bytes is too short for the 8-byte header size");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | static_cast<uint64_t>(bytes[static_cast<size_t>(i)]);
  if (header_size > kSafetensorsMaxHeader)
    fail(kOp, file, ": header size ", header_size, " exceeds the ", kSafetensorsMaxHeader, "-byte limit");
  if (header_size > bytes.size() - 8)
    fail(kOp, file, ": header size ", header_size, " extends past the end of the file (", bytes.size(), " bytes)");
  if (header_size < 2) fail(kOp, file, ": header size ", header_size, " cannot hold a JSON object");
  f.data_offset_ = 8 + header_size;
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), header_size);

  if (const auto bad = invalid_utf8_at(text))
    fail(kOp, file, ": the header is not valid UTF-8 (byte ", *bad, " of the header)");
  JsonReader json(text, file);
  if (json.peek() != '{') json.error("the header must be a JSON object");
  bool has_metadata = false;
  read_object(json, "the header", [&](const std::string& key) {
    if (key == "__metadata__") {
      has_metadata = true;
      if (json.peek() != '{') json.error("__metadata__ must be an object of strings");
      read_object(json, "__metadata__", [&](const std::string& mkey) {
        if (json.peek() != '"') json.error("__metadata__ value of '" + mkey + "' must be a string");
        f.metadata_.emplace(mkey, json.string());
      });
      return;
    }
    if (key.empty()) fail(kOp, file, ": a tensor name is empty");
    if (json.peek() != '{') json.error("tensor '" + key + "' must be an object");
    f.tensors_.push_back(parse_tensor(json, file, key));
  });
  (void)has_metadata;
  if (!json.at_end()) json.error("trailing bytes after the header object");

  // The byte ranges must tile [0, data size) exactly.
  const uint64_t data_size = bytes.size() - f.data_offset_;
  std::vector<size_t> order(f.tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = f.tensors_[a];
    const auto& y = f.tensors_[b];
    return x.begin != y.begin ? x.begin < y.begin : x.end < y.end;
  });
  uint64_t at = 0;
  const SafetensorsTensorInfo* previous = nullptr;
  for (size_t i : order) {
    const SafetensorsTensorInfo& t = f.tensors_[i];
    if (t.begin < at)
      fail(kOp, file, ": tensor ", single_quoted(t.name), ": data_offsets [", t.begin, ", ", t.end, "] overlap tensor ",
           single_quoted(previous->name), " [", previous->begin, ", ", previous->end, "]");
    if (t.begin > at)
      fail(kOp, file, ": tensor ", single_quoted(t.name), ": data_offsets [", t.begin, ", ", t.end,
           "] leave a hole: the previous tensor ends at ", at);
    if (t.end > data_size)
      fail(kOp, file, ": tensor ", single_quoted(t.name), ": data_offsets [", t.begin, ", ", t.end,
           "] extend past the end of the file (the data section holds ", data_size, " bytes)");
    at = t.end;
    previous = &t;
  }
  if (at != data_size)
    fail(kOp, file, ": the tensors cover ", at, " bytes of data but the file holds ", data_size,
         " (trailing bytes after the last tensor)");

  for (size_t i = 0; i < f.tensors_.size(); ++i) f.index_.emplace(f.tensors_[i].name, i);
  return f;
}

const SafetensorsTensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::tensor_bytes(std::string_view name) const {
  const SafetensorsTensorInfo* t = find(name);
  check(t != nullptr, kOp, name_, ": no tensor named ", single_quoted(name));
  return bytes_.subspan(static_cast<size_t>(data_offset_ + t->begin), static_cast<size_t>(t->nbytes()));
}

Array SafetensorsFile::tensor(std::string_view name) const {
  const std::span<const std::byte> data = tensor_bytes(name);
  const SafetensorsTensorInfo& t = *find(name);
  const size_t element = t.dtype.element_size();
  std::shared_ptr<Storage> storage;
  if (reinterpret_cast<uintptr_t>(data.data()) % element == 0 && data.size() > 0) {
    check(owner_ != nullptr, kOp, name_, ": tensors need an owner that keeps the bytes alive");
    // The mapping is copy-on-write (mapped_file.h), so a writable pointer is safe to hand out.
    storage = Storage::borrow(const_cast<std::byte*>(data.data()), data.size(), owner_);
  } else {
    storage = Storage::allocate(std::max<size_t>(data.size(), 1), nullptr);
    if (!data.empty()) std::memcpy(storage->data(), data.data(), data.size());
  }
  return Array(std::move(storage), t.dtype, t.shape, contiguous_strides(t.shape), 0);
}

std::vector<std::byte> safetensors_bytes(std::span<const NamedArray> tensors,
                                         const std::map<std::string, std::string>& metadata) {
  const Layout l = layout(tensors, metadata);
  std::vector<std::byte> out;
  out.reserve(8 + l.header.size() + l.data_bytes);
  auto sink = [&](const std::byte* p, size_t n) { out.insert(out.end(), p, p + n); };
  emit(tensors, l, sink);
  return out;
}

void write_safetensors(const std::filesystem::path& path, std::span<const NamedArray> tensors,
                       const std::map<std::string, std::string>& metadata) {
  const Layout l = layout(tensors, metadata);  // validates before any file is created
  write_atomically(path, kOp, [&](std::FILE* f, const std::string& temp) {
    auto sink = [&](const std::byte* p, size_t n) {
      if (n != 0 && std::fwrite(p, 1, n, f) != n) fail(kOp, temp, ": write failed: ", std::strerror(errno));
    };
    emit(tensors, l, sink);
  });
}

}  // namespace tempra::io
