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

std::shared_ptr<MappedFile> MappedFile::open(const std::filesystem::path& path, const char* op) {
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
  const auto size = static_cast<size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) fail(op, path.string(), ": cannot map ", size, " bytes: ", std::strerror(err));
  return std::shared_ptr<MappedFile>(new MappedFile(static_cast<std::byte*>(p), size));
}

MappedFile::~MappedFile() { ::munmap(data_, size_); }

void MappedFile::will_need(size_t offset, size_t length) const {
  if (offset >= size_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t start = offset / page * page;
  const size_t end = std::min(size_, offset + std::min(length, size_ - offset));
  ::madvise(data_ + start, end - start, MADV_WILLNEED);
}

}  // namespace tempra::io
