// apps/tempra/info.h: `tempra info FILE.gguf [--json]`, the GGUF inspector.
#pragma once

#include "args.h"

namespace tempra::app {

// Prints the file's version, alignment, metadata (arrays summarized: element type, length,
// first items) and tensor table (name, type, shape, offset, bytes), as text or as JSON.
// A corrupt file throws tempra::Error, which main() reports with exit code 1.
int run_info(const cli::Args& args);

}  // namespace tempra::app
