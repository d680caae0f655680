#include "args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>

namespace tempra::cli {
namespace {

bool is_help(std::string_view s) { return s == "-h" || s == "--help"; }

// from_chars rejects a leading '+', but "+1" is a reasonable thing to type.
std::string_view strip_plus(std::string_view s) {
  return s.size() > 1 && s[0] == '+' ? s.substr(1) : s;
}

bool parses_as_number(std::string_view s) {
  s = strip_plus(s);
  double d = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  return ec == std::errc{} && end == s.data() + s.size();
}

// "-5" and "-" are values, not options: negative numbers and the stdin convention.
bool looks_like_option(std::string_view s) {
  return s.size() > 1 && s[0] == '-' && !parses_as_number(s);
}

// Why `text` is not a valid value of `kind`, or nullopt if it is. Shared by
// user input (UsageError) and table defaults (logic_error).
std::optional<std::string> value_problem(Kind kind, std::string_view text) {
  std::string_view s = strip_plus(text);
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (kind == Kind::Int) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range) return "an integer in 64-bit range";
    if (ec != std::errc{} || end != last) return "an integer";
  } else if (kind == Kind::Float) {
    double v = 0;
    auto [end, ec] = std::from_chars(first, last, v);
    if (ec != std::errc{} || end != last || !std::isfinite(v)) return "a finite number";
  }
  return std::nullopt;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

// "-t/--threads": how messages name an option.
std::string display(const Option& o) { return join(o.spellings, "/"); }

std::string metavar(const Option& o) {
  if (!o.metavar.empty()) return o.metavar;
  switch (o.kind) {
    case Kind::Flag: return "";
    case Kind::Int: return "N";
    case Kind::Float: return "X";
    default: return "VALUE";
  }
}

// Table mistakes are caught on every parse, so a bad row fails the first test
// that touches the command rather than misbehaving for some user later.
void validate(const Command& c) {
  auto bug = [&](const std::string& what) {
    throw std::logic_error("command '" + c.name + "': " + what);
  };
  std::set<std::string> seen;
  for (const Option& o : c.options) {
    if (o.spellings.empty()) bug("an option has no spellings");
    for (const auto& s : o.spellings) {
      if (!looks_like_option(s) || s == "--" || s.find('=') != std::string::npos)
        bug("bad option spelling '" + s + "'");
      if (is_help(s)) bug("'" + s + "' is reserved for help");
      if (!seen.insert(s).second) bug("option spelling '" + s + "' declared twice");
    }
    if (o.kind == Kind::Flag && !o.default_value.empty()) bug("flag '" + display(o) + "' has a default");
    if (!o.default_value.empty())
      if (auto p = value_problem(o.kind, o.default_value))
        bug("default '" + o.default_value + "' of '" + display(o) + "' is not " + *p);
  }
  bool optional_seen = false;
  for (const Positional& p : c.positionals) {
    if (!seen.insert(p.name).second) bug("positional '" + p.name + "' declared twice");
    if (p.required && optional_seen) bug("required positional '" + p.name + "' follows an optional one");
    optional_seen |= !p.required;
  }
}

}  // namespace

Args parse(const Command& command, const std::vector<std::string>& args) {
  validate(command);
  Args out;
  std::vector<std::string> candidates = {"-h", "--help"};  // for "did you mean"
  for (const Option& o : command.options) {
    for (const auto& s : o.spellings) {
      out.index_.emplace(s, out.slots_.size());
      candidates.push_back(s);
    }
    out.slots_.push_back({o.kind, display(o)});
  }

  std::vector<std::string> positional_values;
  bool options_ended = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (options_ended || !looks_like_option(token)) {
      positional_values.push_back(token);
      continue;
    }
    if (token == "--") {
      options_ended = true;
      continue;
    }
    // "--name=value" and "--name value" are the same thing.
    const std::size_t eq = token.find('=');
    const std::string name = token.substr(0, eq);
    std::optional<std::string> value;
    if (eq != std::string::npos) value = token.substr(eq + 1);

    if (is_help(name)) {
      out.help_requested = true;
      continue;
    }
    auto it = out.index_.find(name);
    if (it == out.index_.end()) {
      std::string msg = "unknown option '" + name + "'";
      if (auto guess = closest(name, candidates); !guess.empty()) msg += "; did you mean '" + guess + "'?";
      throw UsageError(msg);
    }
    Args::Slot& slot = out.slots_[it->second];
    if (slot.given && slot.kind != Kind::StringList)
      throw UsageError("option '" + name + "' given more than once (it is " + slot.display + ")");
    slot.given = true;
    if (slot.kind == Kind::Flag) {
      if (value) throw UsageError("option '" + name + "' takes no value, got '" + *value + "'");
      continue;
    }
    // The next token is the value whatever it looks like, so "--temp -1" works.
    if (!value) {
      if (i + 1 >= args.size()) throw UsageError("option '" + name + "' needs a value");
      value = args[++i];
    }
    if (auto problem = value_problem(slot.kind, *value))
      throw UsageError("option '" + name + "' expects " + *problem + ", got '" + *value + "'");
    slot.values.push_back(*value);
  }
  if (out.help_requested) return out;  // help must work even when required things are missing

  for (std::size_t i = 0; i < command.options.size(); ++i) {
    const Option& o = command.options[i];
    Args::Slot& slot = out.slots_[i];
    if (o.required && !slot.given) throw UsageError("missing required option " + slot.display);
    if (!slot.given && !o.default_value.empty()) slot.values.push_back(o.default_value);
  }
  for (std::size_t i = 0; i < command.positionals.size(); ++i) {
    const Positional& p = command.positionals[i];
    if (i < positional_values.size()) {
      out.positionals_[p.name] = positional_values[i];
    } else {
      if (p.required) throw UsageError("missing required argument <" + p.name + ">");
      out.positionals_[p.name] = std::nullopt;
    }
  }
  if (positional_values.size() > command.positionals.size())
    throw UsageError("unexpected argument '" + positional_values[command.positionals.size()] + "'");
  return out;
}

const Args::Slot& Args::slot(std::string_view option, Kind expected) const {
  auto it = index_.find(option);
  if (it == index_.end()) throw std::logic_error("option '" + std::string(option) + "' is not declared");
  const Slot& s = slots_[it->second];
  if (s.kind != expected) throw std::logic_error("option " + s.display + " is read as the wrong kind");
  if (s.kind != Kind::Flag && s.kind != Kind::StringList && s.values.empty())
    throw std::logic_error("option " + s.display + " has no value and no default; check has() first");
  return s;
}

bool Args::flag(std::string_view option) const { return slot(option, Kind::Flag).given; }

std::int64_t Args::integer(std::string_view option) const {
  std::string_view s = strip_plus(slot(option, Kind::Int).values.back());
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);  // validated during parse
  return v;
}

double Args::number(std::string_view option) const {
  std::string_view s = strip_plus(slot(option, Kind::Float).values.back());
  double v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

const std::string& Args::string(std::string_view option) const {
  return slot(option, Kind::String).values.back();
}

const std::vector<std::string>& Args::strings(std::string_view option) const {
  return slot(option, Kind::StringList).values;
}

const std::string& Args::positional(std::string_view name) const {
  static const std::string absent;
  auto it = positionals_.find(name);
  if (it == positionals_.end()) throw std::logic_error("positional '" + std::string(name) + "' is not declared");
  return it->second ? *it->second : absent;
}

bool Args::given(std::string_view option) const {
  auto it = index_.find(option);
  if (it == index_.end()) throw std::logic_error("option '" + std::string(option) + "' is not declared");
  return slots_[it->second].given;
}

bool Args::has(std::string_view option_or_positional) const {
  if (auto it = positionals_.find(option_or_positional); it != positionals_.end()) return it->second.has_value();
  if (given(option_or_positional)) return true;
  return !slots_[index_.find(option_or_positional)->second].values.empty();
}

std::string help(const Command& command, std::string_view program) {
  std::string out = "usage: " + std::string(program) + " " + command.name + " [options]";
  std::vector<std::pair<std::string, std::string>> arguments;
  for (const Positional& p : command.positionals) {
    std::string shown = p.required ? "<" + p.name + ">" : "[" + p.name + "]";
    out += " " + shown;
    arguments.emplace_back(shown, p.help);
  }
  out += "\n\n" + command.summary + "\n";
  if (!arguments.empty()) out += "\narguments:\n" + align_columns(arguments);

  std::vector<std::pair<std::string, std::string>> options;
  for (const Option& o : command.options) {
    std::string left = join(o.spellings, ", ");
    if (auto m = metavar(o); !m.empty()) left += " " + m;
    std::string right = o.help;
    if (o.required) right += " (required)";
    if (!o.default_value.empty()) right += " (default: " + o.default_value + ")";
    if (o.kind == Kind::StringList) right += " (repeatable)";
    options.emplace_back(left, right);
  }
  options.emplace_back("-h, --help", "show this help and exit");
  out += "\noptions:\n" + align_columns(options);
  return out;
}

std::string align_columns(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::size_t width = 0;
  for (const auto& [left, right] : rows) width = std::max(width, left.size());
  std::string out;
  for (const auto& [left, right] : rows) {
    out += "  " + left;
    if (!right.empty()) out += std::string(width - left.size() + 2, ' ') + right;
    out += "\n";
  }
  return out;
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates,
                    std::size_t max_distance) {
  // Levenshtein distance, one row at a time.
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        std::size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = row[j];
        row[j] = next;
      }
    }
    return row[b.size()];
  };
  std::string best;
  std::size_t best_distance = max_distance + 1;
  for (const auto& c : candidates) {
    if (std::size_t d = distance(word, c); d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace tempra::cli
