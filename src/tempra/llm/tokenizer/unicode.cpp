// tempra/llm/tokenizer/unicode.cpp: see unicode.h. The decoder mirrors llama.cpp's unicode_cpt_from_utf8
// branch for branch, since which bytes become U+FFFD decides the token ids of invalid input.
#include "tempra/llm/tokenizer/unicode.h"

#include <algorithm>
#include <array>

#include "tempra/llm/tokenizer/unicode_tables.h"

namespace tempra::llm {
namespace {

bool is_continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// One code point at utf8[offset]; false if the sequence is invalid (the caller emits U+FFFD).
bool decode_one(std::string_view utf8, size_t& offset, uint32_t& cpt) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(utf8[offset + i]); };
  const size_t left = utf8.size() - offset;
  const unsigned char lead = b(0);
  if (!(lead & 0x80)) {
    cpt = lead;
    offset += 1;
    return true;
  }
  if (!(lead & 0x40)) return false;
  if (!(lead & 0x20)) {
    if (left < 2 || !is_continuation(b(1))) return false;
    cpt = (uint32_t(lead & 0x1F) << 6) | (b(1) & 0x3F);
    offset += 2;
    return true;
  }
  if (!(lead & 0x10)) {
    if (left < 3 || !is_continuation(b(1)) || !is_continuation(b(2))) return false;
    cpt = (uint32_t(lead & 0x0F) << 12) | (uint32_t(b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    offset += 3;
    return true;
  }
  if (!(lead & 0x08)) {
    if (left < 4 || !is_continuation(b(1)) || !is_continuation(b(2)) || !is_continuation(b(3))) return false;
    cpt = (uint32_t(lead & 0x07) << 18) | (uint32_t(b(1) & 0x3F) << 12) | (uint32_t(b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    offset += 4;
    return true;
  }
  return false;
}

struct ByteAlphabet {
  std::array<uint32_t, 256> to_cpt{};
  std::array<int16_t, 324> to_byte{};  // code points 0..323 cover the whole alphabet

  ByteAlphabet() {
    to_byte.fill(-1);
    const auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      to_cpt[b] = printable(b) ? uint32_t(b) : uint32_t(next++);
      to_byte[to_cpt[b]] = int16_t(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet table;
  return table;
}

}  // namespace

std::vector<uint32_t> decode_utf8_lenient(std::string_view utf8) {
  std::vector<uint32_t> cpts;
  cpts.reserve(utf8.size());
  size_t offset = 0;
  while (offset < utf8.size()) {
    uint32_t cpt = 0;
    if (decode_one(utf8, offset, cpt)) {
      cpts.push_back(cpt);
    } else {
      cpts.push_back(kReplacementCharacter);
      ++offset;
    }
  }
  return cpts;
}

bool well_formed_utf8_prefix(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<uint8_t>(bytes[i]);
    size_t length = 0;
    uint8_t low = 0x80, high = 0xBF;  // the range of the second byte (Unicode Table 3-7)
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return false;  // a continuation byte, or a lead that no well-formed text has
    }
    for (size_t k = 1; k < length; ++k) {
      if (i + k == bytes.size()) return true;  // cut short here: a prefix so far
      const auto b = static_cast<uint8_t>(bytes[i + k]);
      if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xBF)) return false;
    }
    i += length;
  }
  return true;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt > kMaxCodepoint) cpt = kReplacementCharacter;
  if (cpt <= 0x7F) {
    out.push_back(char(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(char(0xC0 | (cpt >> 6)));
    out.push_back(char(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(char(0xE0 | (cpt >> 12)));
    out.push_back(char(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cpt >> 18)));
    out.push_back(char(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cpt & 0x3F)));
  }
}

CodepointFlags codepoint_flags(uint32_t cpt) {
  using namespace unicode_data;
  CodepointFlags flags;
  if (cpt > kMaxCodepoint) {  // llama.cpp: "undefined", a category all the same
    flags.any = true;
    return flags;
  }
  const auto* run = std::upper_bound(std::begin(kCodepointRuns), std::end(kCodepointRuns), cpt,
                                     [](uint32_t c, const CodepointRun& r) { return c < r.start; }) -
                    1;
  flags.letter = run->cls == kLetter;
  flags.number = run->cls == kNumber;
  flags.mark = run->cls == kMark;
  flags.any = run->cls != kNone;
  flags.whitespace = std::binary_search(std::begin(kWhitespace), std::end(kWhitespace), cpt);
  return flags;
}

uint32_t contraction_lower(uint32_t cpt) {
  if (cpt >= 'A' && cpt <= 'Z') return cpt + ('a' - 'A');
  for (int i = 0; i < unicode_data::kContractionLowerCount; ++i)
    if (unicode_data::kContractionLower[i].cpt == cpt) return unicode_data::kContractionLower[i].lower;
  return cpt;
}

uint32_t byte_to_codepoint(uint8_t byte) {
  return alphabet().to_cpt[byte];
}

int codepoint_to_byte(uint32_t cpt) {
  return cpt < alphabet().to_byte.size() ? alphabet().to_byte[cpt] : -1;
}

}  // namespace tempra::llm
