// tempra/llm/tokenizer/pretokenize.cpp: see pretokenize.h. Each alternative of the regex is
// tried in order at the current position, as a hand-written matcher: std::regex lacks \p{..}
// and is quadratic on long runs. Outside the text every code point reads as "no category", which
// is what ends the runs and what `(?!\S)` looks at.
#include "tempra/llm/tokenizer/pretokenize.h"

#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {

std::vector<size_t> pretokenize(PreTokenizer kind, std::span<const uint32_t> cpts) {
  const size_t max_digits = kind == PreTokenizer::llama3 ? 3 : 1;
  std::vector<size_t> words;
  const size_t n = cpts.size();
  constexpr uint32_t kOutside = 0xFFFFFFFF;
  const auto cpt_at = [&](size_t i) { return i < n ? cpts[i] : kOutside; };
  const auto flags_at = [&](size_t i) { return i < n ? codepoint_flags(cpts[i]) : CodepointFlags{}; };
  const auto is_newline = [](uint32_t c) { return c == '\r' || c == '\n'; };
  // What a word's letter run takes: letters, and for qwen35 combining marks too.
  const bool marks_in_words = kind == PreTokenizer::qwen35;
  const auto wordy = [&](const CodepointFlags& f) { return f.letter || (marks_in_words && f.mark); };

  size_t word_start = 0;
  const auto end_word = [&](size_t end) {
    if (end > word_start) words.push_back(end - word_start);
    word_start = end;
  };

  size_t pos = 0;
  while (pos < n) {
    const uint32_t cpt = cpts[pos];
    const CodepointFlags flags = flags_at(pos);

    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (cpt == '\'' && pos + 1 < n) {
      const uint32_t next = contraction_lower(cpts[pos + 1]);
      if (next == 's' || next == 't' || next == 'm' || next == 'd') {
        pos += 2;
        end_word(pos);
        continue;
      }
      if (pos + 2 < n) {
        const uint32_t next2 = contraction_lower(cpts[pos + 2]);
        if ((next == 'r' && next2 == 'e') || (next == 'v' && next2 == 'e') || (next == 'l' && next2 == 'l')) {
          pos += 3;
          end_word(pos);
          continue;
        }
      }
    }

    // [^\r\n\p{L}\p{N}]?\p{L}+ (qwen35: [\p{L}\p{M}]+)
    if (!is_newline(cpt) && !flags.number && (wordy(flags) || wordy(flags_at(pos + 1)))) {
      ++pos;
      while (wordy(flags_at(pos))) ++pos;
      end_word(pos);
      continue;
    }

    // \p{N}{1,max_digits}: a run of digits in words of max_digits, the rest last
    if (flags.number) {
      size_t digits = 0;
      while (flags_at(pos).number && digits < max_digits) ++pos, ++digits;
      end_word(pos);
      continue;
    }

    // <space>?[^\s\p{L}\p{N}]+[\r\n]* (qwen35: [^\s\p{L}\p{M}\p{N}])
    CodepointFlags run = cpt == ' ' ? flags_at(pos + 1) : flags;
    const auto is_symbol = [&](const CodepointFlags& f) { return !(f.whitespace || wordy(f) || f.number) && f.any; };
    if (is_symbol(run) && flags.any) {
      if (cpt == ' ') ++pos;
      while (is_symbol(run)) run = flags_at(++pos);
      while (is_newline(cpt_at(pos))) ++pos;
      end_word(pos);
      continue;
    }

    size_t spaces = 0;
    size_t last_newline_end = 0;
    while (flags_at(pos + spaces).whitespace) {
      if (is_newline(cpt_at(pos + spaces))) last_newline_end = pos + spaces + 1;
      ++spaces;
    }
    // \s*[\r\n]+
    if (last_newline_end > 0) {
      pos = last_newline_end;
      end_word(pos);
      continue;
    }
    // \s+(?!\S): leave the last space to the next word, unless the run ends the text
    if (spaces > 1 && pos + spaces < n) {
      pos += spaces - 1;
      end_word(pos);
      continue;
    }
    // \s+
    if (spaces > 0) {
      pos += spaces;
      end_word(pos);
      continue;
    }
    end_word(++pos);
  }
  return words;
}

}  // namespace tempra::llm
