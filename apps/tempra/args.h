// Table-driven command-line parsing for the `tempra` executable.
//
// A command declares its options and positional arguments as data (a Command);
// parse() checks argv against that table and returns an Args to query; help()
// renders the same table as aligned usage text. Keeping one table means the
// parser, the help and the documentation cannot drift apart.
//
// Accepted syntax (llama.cpp-compatible, so its users' muscle memory works):
//   -ngl 99  -c 4096  -t 4     an option is matched by its whole spelling, so
//                              multi-letter single-dash spellings are ordinary
//   --model x  --model=x       a value follows as the next token or after '='
//   --temp -1  --seed -1       a value-taking option always takes the next
//                              token, even if it starts with '-'
//   --                         everything after is positional
//   -  -5                      a lone '-' and negative numbers are positional
//   -h  --help                 always accepted; sets Args::help_requested and
//                              skips the required checks
// Clustered or glued short options (-t4, -vx) are deliberately not supported.
//
// Errors in what the user typed throw UsageError, whose message names the
// offending argument. Errors in the table itself (duplicate spellings, a
// default that does not parse, asking for an undeclared option) are
// programming bugs and throw std::logic_error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tempra::cli {

// Something the user typed is wrong; the message says what and where.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Kind {
  Flag,        // present or not; takes no value
  Int,         // 64-bit signed integer
  Float,       // finite double
  String,      // any text
  StringList,  // any text, may be given many times; values kept in order
};

struct Option {
  std::vector<std::string> spellings;  // e.g. {"-ngl", "--n-gpu-layers"}; each starts with '-'
  Kind kind = Kind::Flag;
  std::string help;                    // one line
  std::string default_value = {};      // text, parsed like a given value; "" means none
  bool required = false;               // must be given on the command line
  std::string metavar = {};            // placeholder in help ("N", "FILE"); derived from kind if ""
};

struct Positional {
  std::string name;  // the key for Args::positional(), shown as <name> or [name]
  std::string help;
  bool required = true;  // required ones must come before optional ones
};

struct Command {
  std::string name;     // as typed after the program name, e.g. "generate"
  std::string summary;  // one line, shown in the command list and in help
  std::vector<Option> options = {};
  std::vector<Positional> positionals = {};
};

// The result of a successful parse. Options are looked up by any of their
// spellings ("-t" and "--threads" are the same option); positionals by name.
class Args {
 public:
  bool help_requested = false;  // -h / --help was given

  bool flag(std::string_view option) const;
  std::int64_t integer(std::string_view option) const;  // given or default value
  double number(std::string_view option) const;
  const std::string& string(std::string_view option) const;
  const std::vector<std::string>& strings(std::string_view option) const;  // StringList only
  const std::string& positional(std::string_view name) const;  // "" if absent

  bool given(std::string_view option) const;  // typed on the command line
  bool has(std::string_view option_or_positional) const;  // has a value (given or default)

 private:
  friend Args parse(const Command&, const std::vector<std::string>&);
  struct Slot {
    Kind kind;
    std::string display;  // "-t/--threads", for messages
    bool given = false;
    std::vector<std::string> values = {};  // already validated against kind
  };
  const Slot& slot(std::string_view option, Kind expected) const;

  std::vector<Slot> slots_;
  std::map<std::string, std::size_t, std::less<>> index_;  // spelling -> slot
  std::map<std::string, std::optional<std::string>, std::less<>> positionals_;  // every declared name
};

// Parses the arguments that follow the command name (argv without program
// and subcommand). Throws UsageError or, for a bad table, std::logic_error.
Args parse(const Command& command, const std::vector<std::string>& args);

// Usage line, summary, then aligned tables of arguments and options.
// `program` prefixes the usage line: "usage: <program> <name> ...".
std::string help(const Command& command, std::string_view program);

// Two aligned columns, each row "  left  right\n"; used for every help table.
std::string align_columns(const std::vector<std::pair<std::string, std::string>>& rows);

// The candidate closest to `word` by edit distance, or "" if none is within
// max_distance. Used for "did you mean" hints on options and subcommands.
std::string closest(std::string_view word, const std::vector<std::string>& candidates,
                    std::size_t max_distance = 2);

}  // namespace tempra::cli
