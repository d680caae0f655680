// tests/support/command.h: running a command line and keeping what it printed.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/files.h"

namespace tempra::testing {

struct CommandRun {
  int exit_code = -1;  // -1 when the command did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `command` under /bin/sh with stdout and stderr sent to `log`, then reads the log back.
inline CommandRun run_command(const std::string& command, const std::filesystem::path& log) {
  const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(log)};
}

// A path in single quotes, for the shell. (Appended piece by piece: g++ 12 warns falsely,
// -Wrestrict, on "'" + s + "'".)
inline std::string quoted(const std::filesystem::path& path) {
  std::string text = "'";
  text += path.string();
  text += "'";
  return text;
}

}  // namespace tempra::testing
