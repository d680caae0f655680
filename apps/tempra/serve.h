// apps/tempra/serve.h: `tempra serve -m MODEL.gguf`, the OpenAI- and Anthropic-compatible HTTP
// server (src/tempra/serve; docs/SERVER.md).
//
// Contract: the flags are llama-server's spellings (--host --port -c -np -t -a/--alias
// --api-key --timeout, and tempra's --queue, --chunk, --cors). The server answers /health with
// 503 while the model loads, then 200; it logs one line per request on stderr. SIGINT and
// SIGTERM stop new requests (503), let the running ones finish, then exit 0. Exit 1 when the
// model cannot be loaded or the address cannot be bound, 2 on a usage error.
#pragma once

#include "args.h"

namespace tempra::app {

cli::Command serve_command();
int run_serve(const cli::Args& args);

}  // namespace tempra::app
