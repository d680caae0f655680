// tests/io/make_gguf_corpus.cpp: writes the GGUF corpus (gguf_corpus.h) into a folder.
//
//   make_gguf_corpus tests/io/corpus
// The files are committed: they seed the fuzzer (scripts/fuzz.sh) and the CLI tests use them;
// gguf_corpus_test fails if they drift from what this program writes.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "io/gguf_corpus.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_gguf_corpus <folder>\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& file, const std::vector<std::byte>& bytes) {
    std::ofstream out(dir / file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::cerr << "cannot write " << (dir / file) << "\n";
      std::exit(1);
    }
  };
  int n = 0;
  for (const auto& c : tempra::io::testing::corrupt_cases()) write("bad_" + c.name + ".gguf", c.bytes), ++n;
  for (const auto& c : tempra::io::testing::good_cases()) write("good_" + c.name + ".gguf", c.bytes), ++n;
  std::cout << "wrote " << n << " files to " << dir << "\n";
  return 0;
}
