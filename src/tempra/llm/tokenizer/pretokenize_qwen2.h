// tempra/llm/tokenizer/pretokenize_qwen2.h: the `qwen2` pre-tokenizer split (Qwen2, Qwen2.5, Qwen3).
//
// Contract: splits a run of code points into words, returned as their lengths in code points
// (they sum to cpts.size(); none is 0). The words are the matches of the regex from Qwen's
// tokenizer.json, as llama.cpp implements it (src/unicode.cpp, unicode_regex_split_custom_qwen2,
// which this follows decision for decision):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} | ?[^\s\p{L}\p{N}]+[\r\n]*
//   | \s*[\r\n]+ | \s+(?!\S) | \s+
// with \p{L}, \p{N} and \s taken from llama.cpp's Unicode tables (unicode.h). Linear time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tempra::llm {

std::vector<size_t> pretokenize_qwen2(std::span<const uint32_t> cpts);

}  // namespace tempra::llm
