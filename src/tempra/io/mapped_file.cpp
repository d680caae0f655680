// tempra/io/mapped_file.cpp
#include "tempra/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tempra/core/error.h"

namespace tempra::io {
namespace {

// Opens `path` read-only and checks it is a non-empty regular file; returns the descriptor and size.
std::pair<int, uint64_t> open_regular(const std::filesystem::path& path, const char* op) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(op, path.string(), ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(op, path.string(), ": cannot stat: ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(op, path.string(), ": not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    fail(op, path.string(), ": the file is empty");
  }
  return {fd, static_cast<uint64_t>(st.st_size)};
}

size_t page_size() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

}  // namespace

std::shared_ptr<MappedFile> MappedFile::open(const std::filesystem::path& path, const char* op) {
  const auto [fd, size64] = open_regular(path, op);
  const auto size = static_cast<size_t>(size64);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) fail(op, path.string(), ": cannot map ", size, " bytes: ", std::strerror(err));
  auto* base = static_cast<std::byte*>(p);
  return std::shared_ptr<MappedFile>(new MappedFile(base, size, base, size));
}

MappedFile::~MappedFile() { ::munmap(base_, mapped_); }

void MappedFile::will_need(size_t offset, size_t length) const {
  if (offset >= size_) return;
  const size_t page = page_size();
  const auto start = static_cast<size_t>(data_ - base_) + offset;
  const size_t first = start / page * page;
  const size_t end = start + std::min(length, size_ - offset);
  ::madvise(base_ + first, end - first, MADV_WILLNEED);
}

std::shared_ptr<ReadableFile> ReadableFile::open(const std::filesystem::path& path, const char* op) {
  const auto [fd, size] = open_regular(path, op);
  return std::shared_ptr<ReadableFile>(new ReadableFile(fd, path.string(), size, op));
}

ReadableFile::~ReadableFile() { ::close(fd_); }

void ReadableFile::read(uint64_t offset, std::span<std::byte> out) const {
  if (offset > size_ || out.size() > size_ - offset)
    fail(op_, path_, ": cannot read [", offset, ", +", out.size(), "): the file has ", size_, " bytes");
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(op_, path_, ": cannot read [", offset, ", +", out.size(), "): ", std::strerror(errno));
    if (got == 0) fail(op_, path_, ": cannot read [", offset, ", +", out.size(), "): the file ended at ", offset + done);
    done += static_cast<size_t>(got);
  }
}

std::shared_ptr<MappedFile> ReadableFile::map(uint64_t offset, size_t length) const {
  if (length == 0 || offset > size_ || length > size_ - offset)
    fail(op_, path_, ": cannot map [", offset, ", +", length, "): the file has ", size_, " bytes");
  const uint64_t first = offset / page_size() * page_size();
  const auto mapped = static_cast<size_t>(offset - first) + length;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, static_cast<off_t>(first));
  if (p == MAP_FAILED)
    fail(op_, path_, ": cannot map ", length, " bytes at offset ", offset, ": ", std::strerror(errno));
  auto* base = static_cast<std::byte*>(p);
  return std::shared_ptr<MappedFile>(new MappedFile(base, mapped, base + (offset - first), length));
}

void ReadableFile::will_need(uint64_t offset, uint64_t length) const {
  if (offset >= size_) return;
  ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(std::min(length, size_ - offset)),
                  POSIX_FADV_WILLNEED);
}

}  // namespace tempra::io
