// tempra/io/mapped_file.h: a whole file mapped into memory (POSIX mmap), kept alive by shared_ptr.
//
// The file is opened read-only and mapped MAP_PRIVATE with PROT_READ | PROT_WRITE: the file is
// never modified, and a write through a tensor view (ops such as copy_into write into existing
// arrays) lands in a private copy-on-write page instead of faulting. Pages load on first touch;
// nothing is read eagerly. Tensors handed out by the GGUF reader hold the mapping through their
// Storage, so it is unmapped when the last of them dies.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>

namespace tempra::io {

class MappedFile {
 public:
  // Maps `path`; throws tempra::Error ("[gguf] <path>: ...") if it cannot be opened, is not a
  // regular file, or is empty (mmap cannot map zero bytes).
  static std::shared_ptr<MappedFile> open(const std::filesystem::path& path, const char* op = "gguf");
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  // Hints that [offset, offset + length) is about to be read (madvise WILLNEED); never throws.
  void will_need(size_t offset, size_t length) const;

 private:
  MappedFile(std::byte* data, size_t size) : data_(data), size_(size) {}
  std::byte* data_;
  size_t size_;
};

}  // namespace tempra::io
