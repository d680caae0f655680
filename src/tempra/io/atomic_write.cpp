// tempra/io/atomic_write.cpp: temp file, fsync, rename (see atomic_write.h).
#include "tempra/io/atomic_write.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tempra/core/error.h"

namespace tempra::io {

void write_atomically(const std::filesystem::path& path, const char* op,
                      FunctionRef<void(std::FILE* file, const std::string& temp_name)> body) {
  const std::string target = path.string();
  const std::string temp = target + ".tmp-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (!f) fail(op, temp, ": cannot create: ", std::strerror(errno));
  try {
    body(f, temp);
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) fail(op, temp, ": flush failed: ", std::strerror(errno));
  } catch (...) {
    std::fclose(f);
    std::remove(temp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    std::remove(temp.c_str());
    fail(op, temp, ": close failed: ", std::strerror(errno));
  }
  if (std::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    std::remove(temp.c_str());
    fail(op, target, ": cannot rename ", temp, " into place: ", std::strerror(err));
  }
}

}  // namespace tempra::io
