// tests/io/gguf_corpus.cpp: see gguf_corpus.h.
#include "io/gguf_corpus.h"

#include <cstdint>

#include "io/gguf_builder.h"
#include "tempra/core/half.h"
#include "tempra/io/gguf_writer.h"

namespace tempra::io::testing {
namespace {

constexpr int32_t kF32 = 0, kQ8_0 = 8;
constexpr uint32_t kTypeU8 = 0, kTypeU32 = 4, kTypeI32 = 5, kTypeF32 = 6, kTypeBool = 7, kTypeString = 8,
                   kTypeArray = 9, kTypeU64 = 10;

// A valid file: two f32 tensors "a" [4] at 0 and "b" [2, 2] at 32, then 64 data bytes.
GgufBuilder two_tensors(uint32_t version = 3) {
  GgufBuilder b;
  b.header(version, 2, 1).kv_string("general.architecture", "tiny");
  b.tensor_info("a", {4}, kF32, 0).tensor_info("b", {2, 2}, kF32, 32);
  return b;
}

// One kv (written by `kv`), one f32 tensor [4] at offset 0, padded data.
template <class Kv>
GgufBuilder one_kv(Kv kv) {
  GgufBuilder b;
  b.header(3, 1, 1);
  kv(b);
  b.tensor_info("a", {4}, kF32, 0).pad().zeros(32);
  return b;
}

// No metadata, one tensor whose info `info` writes, then 64 data bytes.
template <class Info>
GgufBuilder one_tensor(Info info) {
  GgufBuilder b;
  b.header(3, 1, 0);
  info(b);
  b.pad().zeros(64);
  return b;
}

}  // namespace

std::vector<CorpusFile> corrupt_cases() {
  std::vector<CorpusFile> c;
  auto add = [&](std::string name, const GgufBuilder& b, std::string expected) {
    c.push_back({std::move(name), b.bytes(), std::move(expected)});
  };

  add("empty_file", GgufBuilder(), "empty");
  add("bad_magic", GgufBuilder().raw("GGML").u32(3).u64(0).u64(0), "bad magic");
  add("version_1", GgufBuilder().raw("GGUF").u32(1).u32(0).u32(0), "version 1 is not supported");
  add("version_4", GgufBuilder().header(4, 0, 0), "unsupported GGUF version 4");
  add("big_endian", GgufBuilder().raw("GGUF").u32(0x03000000).u64(0).u64(0), "big-endian");
  add("truncated_header", GgufBuilder().raw("GGUF").u32(3).u32(0), "truncated: the tensor count");
  add("huge_n_tensors", GgufBuilder().header(3, uint64_t{1} << 60, 0).zeros(64), "tensor count 1152921504606846976");
  add("huge_n_kv", GgufBuilder().header(3, 0, uint64_t{1} << 60).zeros(64), "metadata count 1152921504606846976");
  add("key_length_max", GgufBuilder().header(3, 0, 1).u64(UINT64_MAX).zeros(16), "has length 18446744073709551615");
  add("string_value_past_eof", GgufBuilder().header(3, 0, 1).key("general.name", kTypeString).u64(1000).raw("tiny"),
      "the value of 'general.name' has length 1000");
  add("array_length_huge", GgufBuilder().header(3, 0, 1).kv_array("x", kTypeU32, uint64_t{1} << 61).zeros(16),
      "array of 2305843009213693952 u32");
  {
    GgufBuilder b;
    b.header(3, 0, 1).key("bomb", kTypeArray);
    for (int i = 0; i < 64; ++i) b.u32(kTypeArray).u64(1);
    b.u32(kTypeU8).u64(1).u8(0);
    add("nested_array_depth_bomb", b, "nests arrays deeper than");
  }
  add("unknown_value_type", GgufBuilder().header(3, 0, 1).key("x", 13).u32(0), "unknown value type 13");
  add("unknown_array_element_type", GgufBuilder().header(3, 0, 1).kv_array("x", 99, 1).u32(0),
      "unknown array element type 99");
  add("bool_value_not_0_or_1", GgufBuilder().header(3, 0, 1).key("flag", kTypeBool).u8(2), "is bool 2");
  add("empty_key", GgufBuilder().header(3, 0, 1).kv_u32("", 1), "empty key");
  add("duplicate_keys", GgufBuilder().header(3, 0, 2).kv_u32("general.x", 1).kv_u32("general.x", 2),
      "duplicate metadata key 'general.x'");
  add("alignment_zero", one_kv([](GgufBuilder& b) { b.kv_u32("general.alignment", 0); }),
      "general.alignment 0 is not a nonzero power of two");
  add("alignment_odd_3", one_kv([](GgufBuilder& b) { b.kv_u32("general.alignment", 3); }),
      "general.alignment 3 is not a nonzero power of two");
  add("alignment_wrong_type", one_kv([](GgufBuilder& b) { b.key("general.alignment", kTypeU64).u64(32); }),
      "general.alignment is u64, expected u32");
  add("tokenizer_tokens_not_strings",
      one_kv([](GgufBuilder& b) { b.kv_array("tokenizer.ggml.tokens", kTypeU32, 2).u32(1).u32(2); }),
      "'tokenizer.ggml.tokens' is array[u32], expected array[string]");
  add("tokenizer_scores_not_f32",
      one_kv([](GgufBuilder& b) { b.kv_array("tokenizer.ggml.scores", kTypeI32, 1).i32(0); }),
      "'tokenizer.ggml.scores' is array[i32], expected array[f32]");
  add("tokenizer_token_type_not_i32",
      one_kv([](GgufBuilder& b) { b.kv_array("tokenizer.ggml.token_type", kTypeF32, 1).f32(0); }),
      "'tokenizer.ggml.token_type' is array[f32], expected array[i32]");
  add("tokenizer_merges_not_strings", one_kv([](GgufBuilder& b) { b.key("tokenizer.ggml.merges", kTypeString).str("a b"); }),
      "'tokenizer.ggml.merges' is string, expected array[string]");
  {
    GgufBuilder b;
    b.header(3, 0, 2).kv_array("tokenizer.ggml.tokens", kTypeString, 2).str("a").str("b");
    b.kv_array("tokenizer.ggml.scores", kTypeF32, 1).f32(0);
    add("tokenizer_scores_length_mismatch", b, "'tokenizer.ggml.scores' has 1 entries but there are 2 tokens");
  }
  add("tensor_empty_name", one_tensor([](GgufBuilder& b) { b.tensor_info("", {4}, kF32, 0); }), "empty name");
  add("n_dims_5", one_tensor([](GgufBuilder& b) { b.tensor_info("blk.0.attn_q.weight", {1, 1, 1, 1, 1}, kF32, 0); }),
      "tensor 0 'blk.0.attn_q.weight' has 5 dims (max 4)");
  add("negative_dim", one_tensor([](GgufBuilder& b) { b.tensor_info("w", {4, -2}, kF32, 0); }),
      "dimension 1 is -2 (negative)");
  add("dims_product_overflow",
      one_tensor([](GgufBuilder& b) { b.tensor_info("w", {int64_t{1} << 40, int64_t{1} << 40}, kF32, 0); }),
      "overflows 64 bits");
  add("dims_product_overflow_behind_a_zero",
      one_tensor([](GgufBuilder& b) { b.tensor_info("w", {0, int64_t{1} << 40, int64_t{1} << 40}, kF32, 0); }),
      "overflows 64 bits");
  add("byte_size_overflow",
      one_tensor([](GgufBuilder& b) { b.tensor_info("w", {int64_t{1} << 31, int64_t{1} << 31}, kF32, 0); }),
      "byte size");
  add("unknown_ggml_type", one_tensor([](GgufBuilder& b) { b.tensor_info("w", {4}, 99, 0); }),
      "tensor 0 'w' has ggml type 99 (unknown)");
  add("unsupported_ggml_type_iq2_xxs", one_tensor([](GgufBuilder& b) { b.tensor_info("w", {256}, 16, 0); }),
      "ggml type 16 (iq2_xxs), which tempra does not support");
  add("block_row_not_multiple", one_tensor([](GgufBuilder& b) { b.tensor_info("w", {33, 2}, kQ8_0, 0); }),
      "row length ne[0] = 33 is not a multiple of the q8_0 block size 32");
  add("offset_misaligned", one_tensor([](GgufBuilder& b) { b.tensor_info("w", {4}, kF32, 4); }),
      "offset 4 is not a multiple of the alignment 32");
  add("offset_past_eof", one_tensor([](GgufBuilder& b) { b.tensor_info("w", {4}, kF32, 4096); }),
      "extends past the end of the file");
  {
    GgufBuilder b;
    b.header(3, 2, 0).tensor_info("a", {16}, kF32, 0).tensor_info("b", {4}, kF32, 32).pad().zeros(64);
    add("overlapping_tensors", b, "overlap");
  }
  {
    GgufBuilder b;
    b.header(3, 2, 0).tensor_info("w", {4}, kF32, 0).tensor_info("w", {4}, kF32, 32).pad().zeros(64);
    add("duplicate_tensor_names", b, "duplicate tensor name 'w'");
  }
  {
    GgufBuilder b = two_tensors();
    add("truncated_tensor_infos", b.truncate(b.size() - 10), "truncated");
  }
  add("truncated_data", two_tensors().pad().zeros(40), "'b' data [32, +16)");
  add("data_section_past_eof", two_tensors(), "the data section would start at offset");
  return c;
}

std::vector<CorpusFile> good_cases() {
  std::vector<CorpusFile> c;
  {
    GgufWriter w;
    GgufMetadata& m = w.metadata();
    m.add("general.architecture", {std::string("tiny")});
    m.add("general.name", {std::string("corpus seed")});
    m.add("tiny.u8", {uint8_t{7}});
    m.add("tiny.i8", {int8_t{-7}});
    m.add("tiny.u16", {uint16_t{700}});
    m.add("tiny.i16", {int16_t{-700}});
    m.add("tiny.context_length", {uint32_t{128}});
    m.add("tiny.i32", {int32_t{-70000}});
    m.add("tiny.rope_theta", {10000.0f});
    m.add("tiny.flag", {true});
    m.add("tiny.u64", {uint64_t{1} << 40});
    m.add("tiny.i64", {-(int64_t{1} << 40)});
    m.add("tiny.f64", {0.125});
    m.add("tokenizer.ggml.tokens", {GgufArray{std::vector<std::string>{"<s>", "a", "b"}}});
    m.add("tokenizer.ggml.scores", {GgufArray{std::vector<float>{0.f, -1.f, -2.f}}});
    m.add("tokenizer.ggml.token_type", {GgufArray{std::vector<int32_t>{3, 1, 1}}});
    static const float kF32Data[6] = {1, 2, 3, 4, 5, 6};
    static const uint16_t kF16Data[4] = {0x3c00, 0x4000, 0x4200, 0x4400};  // 1, 2, 3, 4
    static std::byte q8[34]{};
    q8[1] = std::byte{0x3c};  // d = 1.0 in f16
    for (int i = 0; i < 32; ++i) q8[2 + i] = static_cast<std::byte>(i - 16);
    const int64_t ne_f32[] = {3, 2}, ne_f16[] = {4}, ne_q8[] = {32, 1};
    w.add_tensor("token_embd.weight", 0, ne_f32, std::as_bytes(std::span(kF32Data)));
    w.add_tensor("output_norm.weight", 1, ne_f16, std::as_bytes(std::span(kF16Data)));
    w.add_tensor("blk.0.attn_q.weight", 8, ne_q8, std::span<const std::byte>(q8));
    c.push_back({"tiny_model", w.to_bytes(), ""});
  }
  {
    GgufWriter w(2);  // a v2 file with metadata only
    w.metadata().add("general.architecture", {std::string("none")});
    w.metadata().add("general.alignment", {uint32_t{64}});
    c.push_back({"v2_metadata_only", w.to_bytes(), ""});
  }
  {
    GgufWriter w;  // arrays of arrays: valid GGUF, though ggml's own reader refuses them
    w.metadata().add("general.architecture", {std::string("nested")});
    w.metadata().add("nested.u8", {GgufArray{std::vector<GgufArray>{GgufArray{std::vector<uint8_t>{1, 2}},
                                                                    GgufArray{std::vector<uint8_t>{3}}}}});
    w.metadata().add("nested.strings",
                     {GgufArray{std::vector<GgufArray>{GgufArray{std::vector<GgufArray>{
                         GgufArray{std::vector<std::string>{"deep"}}}}}}});
    c.push_back({"nested_arrays", w.to_bytes(), ""});
  }
  return c;
}

}  // namespace tempra::io::testing
