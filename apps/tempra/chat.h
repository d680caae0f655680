// apps/tempra/chat.h: `tempra chat -m MODEL.gguf`, an interactive conversation.
//
// Contract: reads user turns from stdin (a TTY or a pipe; a line ending in '\' continues on the
// next line), renders the whole conversation with the model's chat template each turn and
// evaluates only what the session does not already hold (llm::Generator's prefix reuse), and
// streams the answer to stdout. Thinking (<think>...</think>) is shown dim on a TTY, between
// its literal tags otherwise, or not at all with --hide-think; --no-think renders the template
// with thinking disabled. Commands: /exit (or end of input) ends, /reset forgets the
// conversation (the system message stays). Timings go to stderr after each answer. A turn that
// no longer fits the context is refused with the counts and the conversation kept as it was.
#pragma once

#include "args.h"

namespace tempra::app {

cli::Command chat_command();
int run_chat(const cli::Args& args);

}  // namespace tempra::app
