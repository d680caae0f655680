// tempra/core/utf8.h: the one check of well-formed UTF-8.
//
// Well-formed means RFC 3629: no overlong forms, no surrogates (U+D800 ... U+DFFF), nothing
// above U+10FFFF, no truncated sequence. Strict because its users are: the safetensors header
// is parsed by serde_json in the reference reader, which refuses anything else, and the CLI
// rejects prompts that are not text rather than tokenizing garbage.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace tempra {

// The offset of the first byte that does not start a well-formed sequence, or nullopt.
std::optional<size_t> invalid_utf8_at(std::string_view text);

}  // namespace tempra
