// tempra/io/ggml_types.cpp: ids from ggml.h (enum ggml_type, llama.cpp b7000-era numbering).
#include "tempra/io/ggml_types.h"

#include <array>
#include <string_view>

#include "tempra/quant/formats.h"

namespace tempra::io {
namespace {

struct PlainType {
  int32_t ggml_type;
  DType dtype;
};
constexpr std::array<PlainType, 8> kPlainTypes{{
    {0, DType::f32},
    {1, DType::f16},
    {24, DType::i8},
    {25, DType::i16},
    {26, DType::i32},
    {27, DType::i64},
    {28, DType::f64},
    {30, DType::bf16},
}};

// ggml_type_name() for every id below GGML_TYPE_COUNT; "" marks a removed id.
constexpr std::array<std::string_view, 43> kGgmlNames{
    "f32",   "f16",     "q4_0",   "q4_1",   "",       "",       "q5_0",    "q5_1",  "q8_0",
    "q8_1",  "q2_K",    "q3_K",   "q4_K",   "q5_K",   "q6_K",   "q8_K",    "iq2_xxs", "iq2_xs",
    "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s",  "iq2_s",  "iq4_xs", "i8",      "i16",   "i32",
    "i64",   "f64",     "iq1_m",  "bf16",   "",       "",       "",        "tq1_0", "tq2_0",
    "",      "",        "",       "mxfp4",  "nvfp4",  "q1_0",   "q2_0"};

}  // namespace

std::optional<DType> dtype_for_ggml_type(int32_t ggml_type) {
  for (const PlainType& p : kPlainTypes)
    if (p.ggml_type == ggml_type) return p.dtype;
  if (const quant::QuantFormat* f = quant::find_format_by_ggml_type(ggml_type)) return f->dtype;
  return std::nullopt;
}

std::optional<int32_t> ggml_type_for_dtype(DType dtype) {
  for (const PlainType& p : kPlainTypes)
    if (p.dtype == dtype) return p.ggml_type;
  if (const quant::QuantFormat* f = quant::find_format(dtype)) return f->ggml_type;
  return std::nullopt;
}

std::string ggml_type_name(int32_t ggml_type) {
  if (ggml_type >= 0 && ggml_type < static_cast<int32_t>(kGgmlNames.size()) && !kGgmlNames[ggml_type].empty())
    return std::string(kGgmlNames[ggml_type]);
  return "unknown";
}

}  // namespace tempra::io
