// tempra/io/mapped_file.h: files read by mapping (POSIX mmap) or by offset (pread).
//
// MappedFile: a whole file, or one range of it, mapped into memory, kept alive by shared_ptr.
// The file is opened read-only and mapped MAP_PRIVATE with PROT_READ | PROT_WRITE: the file is
// never modified, and a write through a tensor view (ops such as copy_into write into existing
// arrays) lands in a private copy-on-write page instead of faulting. Pages load on first touch;
// nothing is read eagerly. Tensors handed out by the GGUF reader hold the mapping through their
// Storage, so it is unmapped when the last of them dies.
//
// ReadableFile: an open file descriptor, for what must not be mapped whole: a GGUF whose
// tensors are mapped one at a time (so a process's address space holds only the tensors it
// asked for) and experts streamed from disk by pread (llm/model/expert_cache.h). Errors name
// the file; a short read is an error (the file changed under us or the disk failed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

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
  friend class ReadableFile;
  // data/size: the bytes asked for; base/mapped: the page-aligned mapping that holds them.
  MappedFile(std::byte* base, size_t mapped, std::byte* data, size_t size)
      : base_(base), mapped_(mapped), data_(data), size_(size) {}
  std::byte* base_;
  size_t mapped_;
  std::byte* data_;
  size_t size_;
};

class ReadableFile {
 public:
  // Opens `path` for reading; the same checks and messages as MappedFile::open.
  static std::shared_ptr<ReadableFile> open(const std::filesystem::path& path, const char* op = "gguf");
  ~ReadableFile();
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Reads exactly `out.size()` bytes at `offset` (pread, retried on EINTR and partial reads);
  // throws naming the file and the range if they are not all there. Safe from several threads.
  void read(uint64_t offset, std::span<std::byte> out) const;
  // Maps [offset, offset + length) (length > 0, inside the file) as MappedFile::open maps a
  // whole file: the mapping starts at the page below `offset` and data() points at `offset`.
  std::shared_ptr<MappedFile> map(uint64_t offset, size_t length) const;
  // Hints that [offset, offset + length) will be read soon (posix_fadvise WILLNEED: the kernel
  // starts reading it into the page cache now, asynchronously); never throws.
  void will_need(uint64_t offset, uint64_t length) const;

 private:
  ReadableFile(int fd, std::string path, uint64_t size, const char* op)
      : fd_(fd), path_(std::move(path)), size_(size), op_(op) {}
  int fd_;
  std::string path_;
  uint64_t size_;
  const char* op_;
};

}  // namespace tempra::io
