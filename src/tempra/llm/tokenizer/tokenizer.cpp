// tempra/llm/tokenizer/tokenizer.cpp: see tokenizer.h. The GGUF keys and the attribute rules follow
// llama.cpp's llama-vocab.cpp (load, tokenizer_st_partition, token_to_piece).
#include "tempra/llm/tokenizer/tokenizer.h"

#include <algorithm>
#include <optional>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <utility>

#include "tempra/core/error.h"
#include "tempra/llm/tokenizer/pretokenize.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {
namespace {

constexpr std::string_view kOp = "tokenizer";

uint32_t attr_of(TokenType type) {
  switch (type) {
    case TokenType::unknown:
      return kAttrUnknown;
    case TokenType::unused:
      return kAttrUnused;
    case TokenType::normal:
      return kAttrNormal;
    case TokenType::control:
      return kAttrControl;
    case TokenType::user_defined:
      return kAttrUserDefined;
    case TokenType::byte:
      return kAttrByte;
    default:
      return kAttrUndefined;
  }
}

// llama.cpp marks tokens with these texts end-of-generation and forces them CONTROL.
constexpr std::array<std::string_view, 22> kEndOfGenerationTexts = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "[e~["};

int32_t optional_id(const io::GgufMetadata& m, std::string_view key, int32_t n_tokens) {
  const io::GgufValue* v = m.find(key);
  if (!v) return -1;
  int64_t id = -1;
  if (v->is<uint32_t>())
    id = std::get<uint32_t>(v->value);
  else if (v->is<int32_t>())
    id = std::get<int32_t>(v->value);
  else
    fail(kOp, "GGUF key ", key, " is ", io::describe_type(*v), ", expected u32");
  check(id >= 0 && id < n_tokens, kOp, "GGUF key ", key, " = ", id, " is outside the vocab of ", n_tokens, " tokens");
  return int32_t(id);
}

bool optional_flag(const io::GgufMetadata& m, std::string_view key, bool fallback) {
  return m.get_optional<bool>(key).value_or(fallback);
}

const std::vector<std::string>& string_array(const io::GgufMetadata& m, std::string_view key) {
  const auto& array = m.get<io::GgufArray>(key);
  check(array.element_type() == io::GgufType::string, kOp, "GGUF key ", key, " holds ",
        io::type_name(array.element_type()), ", expected strings");
  return std::get<std::vector<std::string>>(array.items);
}

// The GGUF tokenizer.ggml.pre names llama.cpp maps to each split (llama-vocab.cpp).
constexpr const char* kLlama3Names = "llama3, llama-v3, llama-bpe";
std::optional<PreTokenizer> pre_tokenizer_named(std::string_view name) {
  if (name == "qwen2") return PreTokenizer::qwen2;
  if (name == "qwen35") return PreTokenizer::qwen35;
  if (name == "llama3" || name == "llama-v3" || name == "llama-bpe") return PreTokenizer::llama3;
  return std::nullopt;
}

}  // namespace

Tokenizer::Tokenizer(TokenizerVocab vocab) : vocab_(std::move(vocab)) {
  const size_t n = vocab_.tokens.size();
  check(n > 0, kOp, "empty vocab");
  check(n < size_t(INT32_MAX), kOp, "vocab of ", n, " tokens is too large");
  check(vocab_.model == "gpt2" || vocab_.model == "llama", kOp, "tokenizer.ggml.model '", vocab_.model,
        "' is not supported (gpt2, llama)");
  spm_model_ = vocab_.model == "llama";
  if (!spm_model_) {
    const std::optional<PreTokenizer> pre = pre_tokenizer_named(vocab_.pre);
    check(pre.has_value(), kOp, "pre-tokenizer '", vocab_.pre, "' is not supported (qwen2, qwen35, ", kLlama3Names, ")");
    pre_ = *pre;
  }
  if (vocab_.types.empty()) vocab_.types.assign(n, TokenType::normal);
  check(vocab_.types.size() == n, kOp, vocab_.types.size(), " token types for ", n, " tokens");
  for (const int32_t id : {vocab_.bos, vocab_.eos, vocab_.pad})
    check(id >= -1 && id < int32_t(n), kOp, "special id ", id, " is outside the vocab of ", n, " tokens");

  attrs_.resize(n);
  for (size_t id = 0; id < n; ++id) {
    attrs_[id] = attr_of(vocab_.types[id]);
    const std::string& text = vocab_.tokens[id];
    if ((attrs_[id] & kAttrControl) && text.find("unused") != std::string::npos) attrs_[id] |= kAttrUnused;
  }
  for (size_t id = 0; id < n; ++id)
    if (std::find(kEndOfGenerationTexts.begin(), kEndOfGenerationTexts.end(), vocab_.tokens[id]) !=
        kEndOfGenerationTexts.end())
      attrs_[id] |= kAttrControl;

  for (size_t id = 0; id < n; ++id)
    if ((attrs_[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) && !vocab_.tokens[id].empty())
      special_.push_back(int32_t(id));
  std::stable_sort(special_.begin(), special_.end(),
                   [&](int32_t a, int32_t b) { return vocab_.tokens[a].size() > vocab_.tokens[b].size(); });

  if (spm_model_) {
    if (vocab_.scores.empty()) vocab_.scores.assign(n, 0.0f);
    spm_ = SpmModel(vocab_.tokens, vocab_.scores);
  } else {
    bpe_ = BpeModel(vocab_.tokens, vocab_.merges);
  }
}

Tokenizer Tokenizer::from_gguf(const io::GgufMetadata& m) {
  TokenizerVocab vocab;
  vocab.model = m.get<std::string>("tokenizer.ggml.model");
  check(vocab.model == "gpt2" || vocab.model == "llama", kOp, "tokenizer.ggml.model '", vocab.model,
        "' is not supported (gpt2, llama)");
  const bool spm = vocab.model == "llama";
  vocab.pre = m.get_optional<std::string>("tokenizer.ggml.pre").value_or("default");
  vocab.tokens = string_array(m, "tokenizer.ggml.tokens");
  const int32_t n = int32_t(std::min<size_t>(vocab.tokens.size(), INT32_MAX));
  if (const io::GgufValue* types = m.find("tokenizer.ggml.token_type")) {
    check(types->is<io::GgufArray>() && std::get<io::GgufArray>(types->value).element_type() == io::GgufType::i32, kOp,
          "GGUF key tokenizer.ggml.token_type is ", io::describe_type(*types), ", expected array[i32]");
    const auto& raw = std::get<std::vector<int32_t>>(std::get<io::GgufArray>(types->value).items);
    check(raw.size() == vocab.tokens.size(), kOp, "tokenizer.ggml.token_type has ", raw.size(), " entries for ",
          vocab.tokens.size(), " tokens");
    vocab.types.reserve(raw.size());
    for (const int32_t t : raw) vocab.types.push_back(static_cast<TokenType>(t));
  }
  if (m.contains("tokenizer.ggml.merges")) vocab.merges = string_array(m, "tokenizer.ggml.merges");
  if (const io::GgufValue* scores = m.find("tokenizer.ggml.scores")) {
    check(scores->is<io::GgufArray>() && std::get<io::GgufArray>(scores->value).element_type() == io::GgufType::f32,
          kOp, "GGUF key tokenizer.ggml.scores is ", io::describe_type(*scores), ", expected array[f32]");
    vocab.scores = std::get<std::vector<float>>(std::get<io::GgufArray>(scores->value).items);
    check(vocab.scores.size() == vocab.tokens.size(), kOp, "tokenizer.ggml.scores has ", vocab.scores.size(),
          " entries for ", vocab.tokens.size(), " tokens");
  }
  vocab.add_space_prefix = optional_flag(m, "tokenizer.ggml.add_space_prefix", true);
  vocab.bos = optional_id(m, "tokenizer.ggml.bos_token_id", n);
  vocab.eos = optional_id(m, "tokenizer.ggml.eos_token_id", n);
  // llama.cpp's defaults for SentencePiece vocabs that name no special tokens.
  if (spm && vocab.bos < 0 && n > 1) vocab.bos = 1;
  if (spm && vocab.eos < 0 && n > 2) vocab.eos = 2;
  vocab.pad = optional_id(m, "tokenizer.ggml.padding_token_id", n);
  // llama.cpp's default for the llama3 pre-tokenizers is to add BOS; the key overrides it.
  const std::optional<PreTokenizer> pre = pre_tokenizer_named(vocab.pre);
  vocab.add_bos = optional_flag(m, "tokenizer.ggml.add_bos_token", spm || pre == PreTokenizer::llama3);
  vocab.add_eos = optional_flag(m, "tokenizer.ggml.add_eos_token", false);
  return Tokenizer(std::move(vocab));
}

void add_tokenizer_metadata(io::GgufMetadata& m, const TokenizerVocab& vocab, const std::string& chat_template) {
  using io::GgufArray;
  m.add("tokenizer.ggml.model", {vocab.model});
  if (vocab.model == "gpt2") m.add("tokenizer.ggml.pre", {vocab.pre});
  m.add("tokenizer.ggml.tokens", {GgufArray{vocab.tokens}});
  std::vector<int32_t> types(vocab.tokens.size(), int32_t(TokenType::normal));
  for (size_t i = 0; i < vocab.types.size() && i < types.size(); ++i) types[i] = int32_t(vocab.types[i]);
  m.add("tokenizer.ggml.token_type", {GgufArray{std::move(types)}});
  if (!vocab.merges.empty()) m.add("tokenizer.ggml.merges", {GgufArray{vocab.merges}});
  if (!vocab.scores.empty()) m.add("tokenizer.ggml.scores", {GgufArray{vocab.scores}});
  if (vocab.model == "llama") m.add("tokenizer.ggml.add_space_prefix", {vocab.add_space_prefix});
  if (vocab.eos >= 0) m.add("tokenizer.ggml.eos_token_id", {uint32_t(vocab.eos)});
  if (vocab.pad >= 0) m.add("tokenizer.ggml.padding_token_id", {uint32_t(vocab.pad)});
  if (vocab.bos >= 0) m.add("tokenizer.ggml.bos_token_id", {uint32_t(vocab.bos)});
  m.add("tokenizer.ggml.add_bos_token", {vocab.add_bos});
  if (vocab.add_eos) m.add("tokenizer.ggml.add_eos_token", {true});
  if (!chat_template.empty()) m.add("tokenizer.chat_template", {chat_template});
}

void Tokenizer::check_id(int32_t id) const {
  check(id >= 0 && id < size(), kOp, "token id ", id, " is outside the vocab of ", size(), " tokens");
}

const std::string& Tokenizer::text(int32_t id) const {
  check_id(id);
  return vocab_.tokens[id];
}

uint32_t Tokenizer::attr(int32_t id) const {
  check_id(id);
  return attrs_[id];
}

void Tokenizer::encode_text(std::string_view text, std::vector<int32_t>& out) const {
  const std::vector<uint32_t> cpts = decode_utf8_lenient(text);
  const std::vector<size_t> words = pretokenize(pre_, cpts);
  std::string utf8, byte_level;
  size_t start = 0;
  for (const size_t length : words) {
    utf8.clear();
    for (size_t i = start; i < start + length; ++i) append_utf8(utf8, cpts[i]);
    start += length;
    byte_level.clear();
    for (const char c : utf8) append_utf8(byte_level, byte_to_codepoint(static_cast<uint8_t>(c)));
    // llama3 vocabs ignore the merges of a word that is a token itself (llama.cpp's
    // ignore_merges; Hugging Face's tokenizer.json says the same).
    const int32_t whole = pre_ == PreTokenizer::llama3 ? bpe_.find(byte_level) : -1;
    if (whole >= 0)
      out.push_back(whole);
    else
      bpe_.encode_word(byte_level, out);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  // Fragments in text order: a run of raw text (offset, length) or a special token (id >= 0).
  struct Fragment {
    int32_t id;
    size_t offset;
    size_t length;
  };
  std::list<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, 0, text.size()});
  for (const int32_t special : special_) {
    if (!options.parse_special && (attrs_[special] & (kAttrControl | kAttrUnknown))) continue;
    const std::string& needle = vocab_.tokens[special];
    for (auto it = fragments.begin(); it != fragments.end(); ++it) {
      if (it->id >= 0) continue;
      const std::string_view raw = text.substr(it->offset, it->length);
      size_t from = 0, match;
      while ((match = raw.find(needle, from)) != std::string_view::npos) {
        if (match > from) fragments.insert(it, {-1, it->offset + from, match - from});
        fragments.insert(it, {special, 0, 0});
        from = match + needle.size();
      }
      if (from == 0) continue;
      if (from < raw.size()) {
        it->offset += from;
        it->length -= from;
      } else {
        it = std::prev(fragments.erase(it));
      }
    }
  }

  std::vector<int32_t> ids;
  if (options.add_special && vocab_.add_bos && vocab_.bos >= 0) ids.push_back(vocab_.bos);
  bool after_special = true;  // the input's start counts as one (llama.cpp's is_prev_special)
  std::string escaped;
  for (const Fragment& f : fragments) {
    if (f.id >= 0) {
      ids.push_back(f.id);
      after_special = true;
    } else if (spm_model_) {
      // SentencePiece: a space prefix where a word would start, every space as U+2581.
      escaped.clear();
      if (vocab_.add_space_prefix && after_special) escaped += "\xe2\x96\x81";
      for (const char c : text.substr(f.offset, f.length)) c == ' ' ? escaped += "\xe2\x96\x81" : escaped += c;
      spm_.encode(escaped, ids);
      after_special = false;
    } else {
      encode_text(text.substr(f.offset, f.length), ids);
      after_special = false;
    }
  }
  if (options.add_special && vocab_.add_eos && vocab_.eos >= 0) ids.push_back(vocab_.eos);
  return ids;
}

std::string Tokenizer::piece(int32_t id, bool render_special) const {
  check_id(id);
  const uint32_t attr = attrs_[id];
  const std::string& text = vocab_.tokens[id];
  if (attr & (kAttrControl | kAttrUnknown)) return render_special ? text : std::string();
  if (attr & kAttrUserDefined) return text;
  if ((attr & kAttrNormal) && spm_model_) {
    // llama.cpp's llama_unescape_whitespace: U+2581 back to a space.
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 3, "\xe2\x96\x81") == 0) {
        out += ' ';
        i += 2;
      } else {
        out += text[i];
      }
    }
    return out;
  }
  if (attr & kAttrNormal) {
    // llama.cpp's llama_decode_text: each code point back to its byte; one outside the
    // byte-level alphabet is spelled out as [UNK_BYTE_0x..<token>].
    std::string out;
    for (const uint32_t cpt : decode_utf8_lenient(text)) {
      const int byte = codepoint_to_byte(cpt);
      if (byte >= 0) {
        out.push_back(char(byte));
        continue;
      }
      std::string utf8;
      append_utf8(utf8, cpt);
      out += "[UNK_BYTE_0x";
      for (const char c : utf8) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(static_cast<uint8_t>(c)));
        out += hex;
      }
      out += text + "]";
    }
    return out;
  }
  if (attr & kAttrByte) {
    // llama.cpp's token_to_byte for BPE vocabs: byte tokens are spelled "<0xXX>".
    if (text.size() >= 5 && text.starts_with("<0x")) {
      const std::string hex = text.substr(3, 2);
      char* end = nullptr;
      const long byte = std::strtol(hex.c_str(), &end, 16);
      if (end != hex.c_str()) return std::string(1, char(byte));
    }
    return {};
  }
  return {};
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  for (const int32_t id : ids) out += piece(id, render_special);
  return out;
}

std::string StreamingDecoder::push(int32_t id) {
  pending_ += tokenizer_->piece(id, render_special_);
  // Emit up to the last position where no UTF-8 sequence is cut: scan back over at most three
  // continuation bytes to the last lead byte; hold it only if its sequence is still incomplete.
  size_t keep_from = pending_.size();
  const size_t limit = pending_.size() >= 4 ? pending_.size() - 4 : 0;
  for (size_t i = pending_.size(); i-- > limit;) {
    const auto c = static_cast<unsigned char>(pending_[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    const size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    if (need > 1 && pending_.size() - i < need) keep_from = i;
    break;
  }
  std::string out = pending_.substr(0, keep_from);
  pending_.erase(0, keep_from);
  return out;
}

std::string StreamingDecoder::finish() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace tempra::llm
