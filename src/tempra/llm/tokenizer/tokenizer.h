// tempra/llm/tokenizer/tokenizer.h: the tokenizers of GGUF models: byte-level BPE
// (`tokenizer.ggml.model = gpt2` with the `qwen2` pre-tokenizer: Qwen2, Qwen2.5, Qwen3; `qwen35`:
// Qwen3.5; or the `llama3` ones, llama-bpe: Llama 3.x) and SentencePiece (`llama`: Llama 2, Mistral, TinyLlama).
//
// Contract:
//   - encode(text) returns llama.cpp's llama_tokenize ids for the same vocab, byte for byte
//     (tests/llm/tokenizer_test.cpp holds it to that on 300+ fixtures and Debian's licenses):
//       1. special tokens are cut out of the text first, atomically: every CONTROL, USER_DEFINED
//          or UNKNOWN token, longest text first, splits every remaining text fragment at each
//          of its occurrences. With parse_special = false only USER_DEFINED tokens are cut out
//          (as llama.cpp and Hugging Face do), so "<|im_start|>" is then tokenized as text;
//       2. gpt2: each text fragment is decoded leniently (invalid UTF-8: one U+FFFD per bad byte,
//          unicode.h), split by the vocab's pre-tokenizer rule (pretokenize.h), and each word is
//          BPE'd in the byte-level alphabet (bpe.h); under llama3 a word that is a token itself
//          is that token, whatever the merges say. No NFC normalization: llama.cpp applies none
//          (Hugging Face's Qwen tokenizer does; they differ on non-NFC input).
//          llama: a fragment that starts the input or follows a special token gets a leading
//          space (add_space_prefix), its spaces become U+2581, and it is merged by score
//          (spm.h), bytes that form no piece falling back to <0xXX> tokens.
//     Invalid UTF-8 never throws; it encodes as U+FFFD would, so decode(encode(s)) == s holds
//     for valid UTF-8 only. Code points above U+10FFFF (lead bytes 0xF5-0xF7) also become
//     U+FFFD, where llama.cpp throws.
//   - decode(ids) concatenates token pieces, llama_token_to_piece's: NORMAL tokens through the
//     byte-level alphabet back to bytes (llama: U+2581 back to a space), CONTROL/USER_DEFINED/UNKNOWN tokens as their text
//     (CONTROL and UNKNOWN only with render_special), BYTE tokens ("<0xXX>") as their byte,
//     UNUSED ones as nothing. No space clean-up. Ids out of range throw.
//   - StreamingDecoder yields decoded text piece by piece but never splits a UTF-8 sequence: an
//     incomplete code point at the end is held until completed; bytes that can never form one
//     are passed through as they are, so the concatenation of all output equals decode(ids).
//   - add_tokenizer_metadata writes a vocab as the tokenizer.* keys from_gguf reads back (and
//     llama.cpp loads): model, pre (gpt2), tokens, token types, merges or scores, the special ids
//     that are set, add_bos/add_eos, and the chat template when one is given.
//   - from_gguf throws tempra::Error naming the key for a missing or malformed field and for a
//     tokenizer model other than gpt2 and llama or a gpt2 pre-tokenizer other than qwen2, qwen35
//     and the llama3 names. Defaults are llama.cpp's: add_bos true for llama and the llama3
//     pre-tokenizers, false otherwise; llama's bos 1 and eos 2 when the file names none.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_value.h"
#include "tempra/llm/tokenizer/bpe.h"
#include "tempra/llm/tokenizer/pretokenize.h"
#include "tempra/llm/tokenizer/spm.h"

namespace tempra::llm {

// GGUF's tokenizer.ggml.token_type values (llama.h, llama_token_type).
enum class TokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

// llama.cpp's token attributes (llama.h, llama_token_attr): the type as a bit, plus the bits
// llama.cpp adds by looking at the text (CONTROL on end-of-generation-looking tokens).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1 << 0,
  kAttrUnused = 1 << 1,
  kAttrNormal = 1 << 2,
  kAttrControl = 1 << 3,
  kAttrUserDefined = 1 << 4,
  kAttrByte = 1 << 5,
};

struct TokenizerVocab {
  std::string model = "gpt2";  // tokenizer.ggml.model: gpt2 (byte-level BPE) or llama (SentencePiece)
  std::vector<std::string> tokens;
  std::vector<TokenType> types;     // one per token; empty means all NORMAL
  std::vector<std::string> merges;  // gpt2: "left right", rank = index
  std::vector<float> scores;        // llama: one per token (empty: all 0)
  bool add_space_prefix = true;     // llama: a space before text that starts the input or follows a special token
  std::string pre = "qwen2";        // gpt2 only
  int32_t bos = -1, eos = -1, pad = -1;
  bool add_bos = false, add_eos = false;
};

struct EncodeOptions {
  bool parse_special = true;  // cut CONTROL tokens out of the text (llama.cpp's chat default)
  bool add_special = false;   // prepend BOS / append EOS when the vocab asks for it
};

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerVocab vocab);
  static Tokenizer from_gguf(const io::GgufMetadata& metadata);
  static Tokenizer from_gguf(const io::GgufFile& file) { return from_gguf(file.metadata()); }
  const TokenizerVocab& vocab() const { return vocab_; }

  std::vector<int32_t> encode(std::string_view text, EncodeOptions options = {}) const;
  std::string decode(std::span<const int32_t> ids, bool render_special = true) const;
  // One token's bytes (llama_token_to_piece with lstrip 0).
  std::string piece(int32_t id, bool render_special = true) const;

  int32_t size() const { return int32_t(vocab_.tokens.size()); }
  const std::string& text(int32_t id) const;
  uint32_t attr(int32_t id) const;
  int32_t bos() const { return vocab_.bos; }
  int32_t eos() const { return vocab_.eos; }
  int32_t pad() const { return vocab_.pad; }

 private:
  void check_id(int32_t id) const;
  void encode_text(std::string_view text, std::vector<int32_t>& out) const;

  TokenizerVocab vocab_;
  std::vector<uint32_t> attrs_;
  std::vector<int32_t> special_;  // CONTROL | USER_DEFINED | UNKNOWN ids, longest text first
  BpeModel bpe_;
  SpmModel spm_;
  bool spm_model_ = false;
  PreTokenizer pre_ = PreTokenizer::qwen2;
};

// The inverse of Tokenizer::from_gguf (see the contract above).
void add_tokenizer_metadata(io::GgufMetadata& metadata, const TokenizerVocab& vocab,
                            const std::string& chat_template = {});

class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool render_special = true)
      : tokenizer_(&tokenizer), render_special_(render_special) {}

  // The text completed by `id`: everything decoded so far that ends on a UTF-8 boundary.
  std::string push(int32_t id);
  // Whatever is still held (an incomplete sequence at the end of the stream), as raw bytes.
  std::string finish();
  bool has_pending() const { return !pending_.empty(); }

 private:
  const Tokenizer* tokenizer_;
  bool render_special_;
  std::string pending_;
};

}  // namespace tempra::llm
