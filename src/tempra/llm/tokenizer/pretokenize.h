// tempra/llm/tokenizer/pretokenize.h: the pre-tokenizer splits of byte-level BPE vocabs: `qwen2`
// (Qwen2, Qwen2.5, Qwen3), `qwen35` (Qwen3.5) and `llama3` (Llama 3.x; GGUF's
// tokenizer.ggml.pre llama-bpe).
//
// Contract: splits a run of code points into words, returned as their lengths in code points
// (they sum to cpts.size(); none is 0). The words are the matches of the regex from the model's
// tokenizer.json, as llama.cpp implements it (src/unicode.cpp, unicode_regex_split_custom_qwen2
// and _llama3, which this follows decision for decision):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,D} | ?[^\s\p{L}\p{N}]+[\r\n]*
//   | \s*[\r\n]+ | \s+(?!\S) | \s+
// where D, the longest run of digits in one word, is 1 for qwen2 and 3 for llama3 (the two
// regexes differ there only), with \p{L}, \p{N} and \s taken from llama.cpp's Unicode tables
// (unicode.h). qwen35 is qwen2 with combining marks (\p{M}) counted as letters: its words are
//   [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*
// (unicode_regex_split_custom_qwen35). Linear time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tempra::llm {

enum class PreTokenizer : uint8_t { qwen2, qwen35, llama3 };

std::vector<size_t> pretokenize(PreTokenizer kind, std::span<const uint32_t> cpts);

}  // namespace tempra::llm
