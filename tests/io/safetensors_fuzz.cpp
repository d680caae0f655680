// tests/io/safetensors_fuzz.cpp: libFuzzer target for the safetensors reader (clang only:
// TEMPRA_FUZZ=ON, tests/io/fuzz.cmake).
//
// Parses the input with SafetensorsFile::parse (the code open() runs on a mapping), reads every
// tensor, re-emits the file through the writer and parses that again: it must hold the same
// tensors (names, dtypes, shapes, bytes) and metadata. tempra::Error is the expected way to
// reject input; a crash, a sanitizer report or any other exception is a finding. Seeds: the
// committed goldens (tests/goldens/*.safetensors, written by an independent writer):
//   build/asan/bin/safetensors_fuzz build/asan/st-corpus tests/goldens -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A private, writable copy: tensor views may be written through, the fuzzer's input may not.
  auto bytes = std::make_shared<std::vector<std::byte>>(size);
  if (size) std::memcpy(bytes->data(), data, size);
  try {
    const tempra::io::SafetensorsFile file = tempra::io::SafetensorsFile::parse(*bytes, "fuzz.safetensors", bytes);
    std::vector<tempra::io::NamedArray> tensors;
    for (const auto& info : file.tensors()) {
      tensors.push_back({info.name, file.tensor(info.name)});
      const tempra::Array& a = tensors.back().value;
      if (a.nbytes() != info.nbytes()) __builtin_trap();
    }
    const std::vector<std::byte> again = tempra::io::safetensors_bytes(tensors, file.metadata());
    const tempra::io::SafetensorsFile reread = tempra::io::SafetensorsFile::parse(again, "again.safetensors", bytes);
    if (reread.tensors().size() != file.tensors().size() || reread.metadata() != file.metadata()) __builtin_trap();
    for (const auto& info : file.tensors()) {
      const tempra::io::SafetensorsTensorInfo* back = reread.find(info.name);
      if (!back || back->dtype != info.dtype || back->shape != info.shape) __builtin_trap();
      const auto x = file.tensor_bytes(info.name), y = reread.tensor_bytes(info.name);
      if (x.size() != y.size() || (x.size() && std::memcmp(x.data(), y.data(), x.size()) != 0)) __builtin_trap();
    }
  } catch (const tempra::Error&) {
  }
  return 0;
}
