// tempra/core/fnv1a.h: FNV-1a, the 64-bit hash that names a run's data in its checkpoints
// (train/finetune.h, train/pretrain.h) and decides a document's split (train/corpus.h).
//
// Contract: Fnv1a starts from FNV's 64-bit offset basis; mix(v) folds one 64-bit word in whole
// (hash = (hash ^ v) * prime: the finetuner's historical form, kept so its checkpoints still
// match), mix_bytes(s) folds bytes one at a time (textbook FNV-1a over a byte string).
#pragma once

#include <cstdint>
#include <string_view>

namespace tempra {

struct Fnv1a {
  static constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t value = 0xcbf29ce484222325ull;

  void mix(uint64_t v) { value = (value ^ v) * kPrime; }
  void mix_bytes(std::string_view s) {
    for (const char c : s) value = (value ^ static_cast<unsigned char>(c)) * kPrime;
  }
};

}  // namespace tempra
