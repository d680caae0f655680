// tests/io/gguf_corpus.h: the GGUF test corpus, built in memory.
//
// corrupt_cases(): one small file per way a GGUF file can be wrong, each with the text its
// error message must contain. good_cases(): small valid files; the first ("tiny_model") has every
// scalar metadata type, tokenizer arrays and f32/f16/q8_0 tensors, and ggml's reader accepts it. make_gguf_corpus writes both to tests/io/corpus/ (bad_<name>.gguf, good_<name>.gguf):
// the seeds of the fuzzer, and files the CLI tests run on. gguf_corpus_test checks that the
// committed files are exactly what this code builds.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tempra::io::testing {

struct CorpusFile {
  std::string name;
  std::vector<std::byte> bytes;
  std::string expected_error;  // corrupt files: a substring of the tempra::Error message
};

std::vector<CorpusFile> corrupt_cases();
std::vector<CorpusFile> good_cases();

}  // namespace tempra::io::testing
