// tests/support/files.h: small file helpers the tests share.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace tempra::testing {

// The whole file's bytes (empty if it cannot be read).
inline std::vector<std::byte> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// The whole file as text (empty if it cannot be read).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A folder in the temporary directory named `name` and unique to this process, created on the
// first call; the same path on every later call with that name. The folders are removed when the
// process that made them exits (a forked child's exit leaves them to its parent): test binaries
// run thousands of times on a developer's machine, and each left copy of a model file fills /tmp.
inline const std::filesystem::path& scratch_dir(const std::string& name) {
  struct Scratch {
    pid_t owner = ::getpid();
    std::map<std::string, std::filesystem::path> made;  // test bodies run on one thread
    ~Scratch() {
      if (::getpid() != owner) return;
      for (const auto& [_, dir] : made) {
        std::error_code ignored;  // a test may have removed it, or left it read-only
        std::filesystem::remove_all(dir, ignored);
      }
    }
  };
  static Scratch scratch;
  auto [it, fresh] = scratch.made.try_emplace(name);
  if (fresh) {
    it->second = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(it->second);
  }
  return it->second;
}

// A .gguf path in the temporary directory, unique to this process.
inline std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".gguf");
}

}  // namespace tempra::testing
