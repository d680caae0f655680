// tempra/io/gguf_writer.cpp: the byte layout mirrors gguf_write_out in ggml/src/gguf.cpp.
#include "tempra/io/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "tempra/core/error.h"
#include "tempra/io/atomic_write.h"
#include "tempra/io/ggml_types.h"

namespace tempra::io {

namespace {

uint64_t align_up(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

class ByteBuffer {
 public:
  template <class T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes.insert(bytes.end(), p, p + s.size());
  }
  std::vector<std::byte> bytes;
};

void put_array(ByteBuffer& out, const GgufArray& a) {
  out.put(static_cast<uint32_t>(a.element_type()));
  out.put(static_cast<uint64_t>(a.size()));
  std::visit(
      [&](const auto& items) {
        using T = typename std::decay_t<decltype(items)>::value_type;
        if constexpr (std::is_same_v<T, std::string>) {
          for (const std::string& s : items) out.put_string(s);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          for (const GgufArray& nested : items) put_array(out, nested);
        } else if constexpr (std::is_same_v<T, bool>) {
          for (bool b : items) out.put(static_cast<uint8_t>(b ? 1 : 0));
        } else {
          const auto* p = reinterpret_cast<const std::byte*>(items.data());
          out.bytes.insert(out.bytes.end(), p, p + items.size() * sizeof(T));
        }
      },
      a.items);
}

void put_value(ByteBuffer& out, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) out.put_string(x);
        else if constexpr (std::is_same_v<T, GgufArray>) put_array(out, x);
        else if constexpr (std::is_same_v<T, bool>) out.put(static_cast<uint8_t>(x ? 1 : 0));
        else out.put(x);
      },
      v.value);
}

// Writes to a FILE*, failing with the path and errno.
class FileSink {
 public:
  FileSink(std::FILE* f, const std::string& path) : f_(f), path_(path) {}
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail("gguf", path_, ": write failed: ", std::strerror(errno));
  }
  void zeros(uint64_t n) {
    static const std::byte kZeros[4096]{};
    while (n) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof kZeros));
      write(kZeros, k);
      n -= k;
    }
  }

 private:
  std::FILE* f_;
  const std::string& path_;
};

class MemorySink {
 public:
  void write(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void zeros(uint64_t n) { bytes.resize(bytes.size() + static_cast<size_t>(n)); }
  std::vector<std::byte> bytes;
};

}  // namespace

struct GgufWriter::Layout {
  std::vector<std::byte> meta;  // header, metadata and tensor infos
  uint32_t alignment = kGgufDefaultAlignment;
  uint64_t data_start = 0;
  std::vector<uint64_t> offsets;  // per tensor, in the data section
  uint64_t total = 0;             // file length
};

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
  check(version == 2 || version == 3, "gguf", "writer: version ", version, " is not 2 or 3");
}

GgufWriter GgufWriter::from(const GgufFile& file) {
  GgufWriter w(file.version());
  w.metadata_ = file.metadata();
  auto keep = std::make_shared<GgufFile>(file);  // holds the bytes' owner (the mapping)
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const GgufTensorInfo& t = file.tensors()[i];
    w.tensors_.push_back(Tensor{t.name, t.n_dims, t.ne, t.ggml_type, file.tensor_bytes(i), keep, t.offset});
  }
  w.file_size_ = file.file_size();
  return w;
}

void GgufWriter::add_tensor(std::string name, int32_t ggml_type, std::span<const int64_t> ne,
                            std::span<const std::byte> data, std::shared_ptr<const void> keep_alive,
                            std::optional<uint64_t> offset) {
  check(ne.size() <= kGgufMaxDims, "gguf", "writer: tensor '", name, "' has ", ne.size(), " dims (max ",
        kGgufMaxDims, ")");
  Tensor t{std::move(name), static_cast<uint32_t>(ne.size()), {1, 1, 1, 1}, ggml_type, data, std::move(keep_alive),
           offset};
  std::copy(ne.begin(), ne.end(), t.ne.begin());
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor(std::string name, const Array& array) {
  check(array.defined() && array.is_contiguous(), "gguf", "writer: tensor '", name,
        "' must be a defined, contiguous array");
  const std::optional<int32_t> type = ggml_type_for_dtype(array.dtype());
  check(type.has_value(), "gguf", "writer: tensor '", name, "' has dtype ", array.dtype().name(),
        ", which GGUF cannot store");
  std::vector<int64_t> ne(array.shape().begin(), array.shape().end());
  std::reverse(ne.begin(), ne.end());
  const auto* p = static_cast<const std::byte*>(array.raw_data());
  add_tensor(std::move(name), *type, ne, {p, array.nbytes()}, array.storage());
}

GgufWriter::Layout GgufWriter::layout() const {
  Layout l;
  if (const GgufValue* a = metadata_.find("general.alignment")) {
    check(a->is<uint32_t>() && std::has_single_bit(std::get<uint32_t>(a->value)), "gguf",
          "writer: general.alignment must be a u32 power of two, got ", describe_type(*a));
    l.alignment = std::get<uint32_t>(a->value);
  }
  ByteBuffer out;
  out.bytes.reserve(1 << 16);
  out.put(std::array<char, 4>{'G', 'G', 'U', 'F'});
  out.put(version_);
  out.put(static_cast<uint64_t>(tensors_.size()));
  out.put(static_cast<uint64_t>(metadata_.size()));
  for (const auto& [key, value] : metadata_.entries()) {
    check(!key.empty(), "gguf", "writer: empty metadata key");
    out.put_string(key);
    if (const auto* a = std::get_if<GgufArray>(&value.value)) {
      out.put(static_cast<uint32_t>(GgufType::array));
      put_array(out, *a);
    } else {
      out.put(static_cast<uint32_t>(value.type()));
      put_value(out, value);
    }
  }
  std::set<std::string, std::less<>> names;
  uint64_t next = 0;  // where an unpinned tensor goes
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const Tensor& t : tensors_) {
    check(!t.name.empty() && names.insert(t.name).second, "gguf", "writer: tensor name '", t.name,
          "' is empty or repeated");
    const std::optional<DType> dtype = dtype_for_ggml_type(t.ggml_type);
    check(dtype.has_value(), "gguf", "writer: tensor '", t.name, "' has unsupported ggml type ", t.ggml_type);
    int64_t numel = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      check(t.ne[d] >= 0 && !__builtin_mul_overflow(numel, t.ne[d], &numel), "gguf", "writer: tensor '", t.name,
            "' has a negative or overflowing extent");
    }
    check(t.ne[0] % static_cast<int64_t>(dtype->info().block_elems) == 0, "gguf", "writer: tensor '", t.name,
          "' row length ", t.ne[0], " is not a multiple of the ", dtype->name(), " block");
    const uint64_t nbytes = dtype->bytes_for(numel);
    check(nbytes == t.data.size(), "gguf", "writer: tensor '", t.name, "' needs ", nbytes, " bytes, got ",
          t.data.size());
    const uint64_t offset = t.offset.value_or(next);
    check(offset % l.alignment == 0, "gguf", "writer: tensor '", t.name, "' offset ", offset,
          " is not a multiple of the alignment ", l.alignment);
    l.offsets.push_back(offset);
    if (nbytes) extents.emplace_back(offset, offset + nbytes);
    next = std::max(next, align_up(offset + nbytes, l.alignment));

    out.put_string(t.name);
    out.put(t.n_dims);
    for (uint32_t d = 0; d < t.n_dims; ++d) out.put(t.ne[d]);
    out.put(t.ggml_type);
    out.put(offset);
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i)
 check(extents[i].first >= extents[i - 1].second, "gguf", "writer: tensors overlap at data offset ", extents[i].first);

  l.meta = std::move(out.bytes);
  l.data_start = align_up(l.meta.size(), l.alignment);
  uint64_t content_end = tensors_.empty() ? l.meta.size() : l.data_start;
  for (const auto& e : extents) content_end = std::max(content_end, l.data_start + e.second);
  l.total = align_up(content_end, l.alignment);
  // A source file that stops short of the final padding (or of the data section, with no
  // tensors) is reproduced at its own length.
  if (file_size_ && *file_size_ >= content_end && *file_size_ <= l.total) l.total = *file_size_;
  return l;
}

template <class Sink>
void GgufWriter::emit(Sink& sink) const {
  const Layout l = layout();
  sink.write(l.meta.data(), l.meta.size());
  uint64_t at = l.meta.size();
  auto pad_to = [&](uint64_t target) {
    if (target > at) sink.zeros(target - at);
    at = std::max(at, target);
  };
  std::vector<size_t> order(tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return l.offsets[a] < l.offsets[b]; });
  for (size_t i : order) {
    if (tensors_[i].data.empty()) continue;
    pad_to(l.data_start + l.offsets[i]);
    sink.write(tensors_[i].data.data(), tensors_[i].data.size());
    at += tensors_[i].data.size();
  }
  pad_to(l.total);
}

std::vector<std::byte> GgufWriter::to_bytes() const {
  MemorySink sink;
  emit(sink);
  return std::move(sink.bytes);
}

void GgufWriter::write(const std::filesystem::path& path) const {
  write_atomically(path, "gguf", [&](std::FILE* f, const std::string& temp) { write(f, temp); });
}

void GgufWriter::write(std::FILE* file, const std::string& name) const {
  FileSink sink(file, name);
  emit(sink);
}

}  // namespace tempra::io
