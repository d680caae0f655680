// tempra/llm/tokenizer/unicode.h: the UTF-8 and code point questions the byte-level BPE tokenizer asks.
//
// Contract: every function here is total: no input byte sequence throws or reads out of bounds.
// Parity: llama.cpp (src/unicode.cpp). decode_utf8_lenient is its unicode_cpts_from_utf8: a lead
// byte followed by enough continuation bytes decodes without checking for overlong forms or
// surrogates; anything else (a stray continuation byte, a truncated sequence, 0xF8-0xFF) becomes
// U+FFFD and consumes one byte. The classes come from llama.cpp's generated tables
// (unicode_tables.h, tools/gen_unicode_tables.py), not from the host's Unicode version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tempra::llm {

inline constexpr uint32_t kReplacementCharacter = 0xFFFD;
inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// llama.cpp's lenient decoder (see above). The result may hold values above 0x10FFFF (from
// leads 0xF5-0xF7); append_utf8 writes those as U+FFFD.
std::vector<uint32_t> decode_utf8_lenient(std::string_view utf8);
// Appends the UTF-8 encoding of `cpt` (U+FFFD for values above 0x10FFFF; surrogates are
// written as their 3-byte form, as llama.cpp does).
void append_utf8(std::string& out, uint32_t cpt);

// Whether `bytes` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF), allowing the last character to be cut short: then it must be a prefix of a
// well-formed one. So a run of tokens is valid text exactly when each prefix passes this test.
bool well_formed_utf8_prefix(std::string_view bytes);

// The length a UTF-8 sequence starting with `lead` claims (1 for continuation and invalid bytes).
inline size_t utf8_sequence_length(unsigned char lead) {
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

// The pre-tokenizer's view of a code point: \p{L}, \p{N}, \s, and whether it has any category
// at all (every code point below 0x110000 has one in llama.cpp's tables; values above have
// "undefined", which also counts).
struct CodepointFlags {
  bool letter = false;
  bool number = false;
  bool mark = false;  // \p{M}
  bool whitespace = false;
  bool any = false;
};
CodepointFlags codepoint_flags(uint32_t cpt);

// The lower case of `cpt` as far as the contractions ('s 't 're 've 'm 'll 'd) need it: correct
// for every code point whose lower case is one of those ASCII letters, identity elsewhere is
// not guaranteed to be Unicode's (only compare the result against ASCII letters).
uint32_t contraction_lower(uint32_t cpt);

// GPT-2's byte-level alphabet: each byte as the code point it is written with in the vocab
// (printable Latin-1 bytes as themselves, the other 68 bytes as U+0100..U+0143), and back.
uint32_t byte_to_codepoint(uint8_t byte);
// The byte a vocab code point stands for, or -1 if it is not in the alphabet.
int codepoint_to_byte(uint32_t cpt);

}  // namespace tempra::llm
