// tempra/io/ggml_types.h: ggml tensor type ids (the numbers GGUF stores) <-> tempra dtypes.
//
// Plain types have fixed ids in ggml.h (F32=0, F16=1, I8=24, I16=25, I32=26, I64=27, F64=28,
// BF16=30); block formats come from the quant traits table (quant::find_format_by_ggml_type).
// ggml types tempra has no dtype for (the IQ and TQ families, MXFP4, ...) are known by name so
// that errors can say what a file holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tempra/core/dtype.h"

namespace tempra::io {

// The dtype of a ggml type id, or nullopt if tempra does not support it.
std::optional<DType> dtype_for_ggml_type(int32_t ggml_type);
// The ggml type id of a dtype, or nullopt if GGUF cannot store it (u8, bool).
std::optional<int32_t> ggml_type_for_dtype(DType dtype);
// ggml's name for a type id ("f32", "q8_0", "iq2_xxs"), or "unknown" for an unassigned id.
std::string ggml_type_name(int32_t ggml_type);

}  // namespace tempra::io
