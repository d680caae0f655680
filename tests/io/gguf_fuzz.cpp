// tests/io/gguf_fuzz.cpp: libFuzzer target for the GGUF reader (clang only: TEMPRA_FUZZ=ON).
//
// Parses the input with GgufFile::parse (the same code GgufFile::open runs on a mapping), then
// touches what a loader would: every metadata value, every tensor view, a re-emission through
// the writer, which must reproduce the input's layout. tempra::Error is the expected way to
// reject input; anything else (a crash, a sanitizer report, another exception) is a finding.
// Run with scripts/fuzz.sh; tests/io/corpus seeds it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A private, writable copy: tensor views may be written through, the fuzzer's input may not.
  auto bytes = std::make_shared<std::vector<std::byte>>(size);
  if (size) std::memcpy(bytes->data(), data, size);
  try {
    const tempra::io::GgufFile file = tempra::io::GgufFile::parse(*bytes, "fuzz.gguf", bytes);
    size_t touched = 0;
    for (const auto& [key, value] : file.metadata().entries()) touched += key.size() + value.value.index();
    for (size_t i = 0; i < file.tensors().size(); ++i) {
      const tempra::Array a = file.tensor(i);
      touched += static_cast<size_t>(a.numel()) + a.nbytes();
      if (a.nbytes()) touched += static_cast<size_t>(static_cast<const unsigned char*>(a.raw_data())[a.nbytes() - 1]);
    }
    const std::vector<std::byte> again = tempra::io::GgufWriter::from(file).to_bytes();
    const tempra::io::GgufFile reread = tempra::io::GgufFile::parse(again, "again.gguf", bytes);
    if (reread.tensors().size() != file.tensors().size() || reread.metadata().size() != file.metadata().size())
      __builtin_trap();  // the writer's output must parse to the same file
    (void)touched;
  } catch (const tempra::Error&) {
  }
  return 0;
}
