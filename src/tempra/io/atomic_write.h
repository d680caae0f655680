// tempra/io/atomic_write.h: writing a file so that a reader sees the old file or the whole new
// one, never a torn one.
//
// Contract: write_atomically(path, op, body) creates a temporary file beside `path` (same folder,
// so the rename is atomic), lets body(file, temp_name) write into it, flushes it to disk and
// renames it over `path`. If body throws or a flush, close or rename fails, the temporary is
// removed, `path` is left as it was, and the error (tempra::Error naming `op` and the file, or
// body's own exception) propagates. Used by every writer of tempra's files: GGUF (GgufWriter and
// the Qwen3 synthesizer, which fills in tensor data after the header), safetensors, and the
// .npy logits of `tempra generate --logits-out`.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include "tempra/core/function_ref.h"

namespace tempra::io {

void write_atomically(const std::filesystem::path& path, const char* op,
                      FunctionRef<void(std::FILE* file, const std::string& temp_name)> body);

}  // namespace tempra::io
