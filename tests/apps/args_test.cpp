// Tests for the table-driven argument parser behind the `tempra` executable.
#include "args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using tempra::cli::Args;
using tempra::cli::Command;
using tempra::cli::Kind;
using tempra::cli::UsageError;

// A command shaped like llama.cpp's main, so the tests read like real use.
Command generate_like() {
  return {
      .name = "generate",
      .summary = "Generate text.",
      .options =
          {
              {.spellings = {"-m", "--model"}, .kind = Kind::String, .help = "model file", .required = true,
               .metavar = "FILE"},
              {.spellings = {"-ngl", "--n-gpu-layers"}, .kind = Kind::Int, .help = "layers to offload",
               .default_value = "0"},
              {.spellings = {"-c", "--ctx-size"}, .kind = Kind::Int, .help = "context size", .default_value = "2048"},
              {.spellings = {"-n", "--n-predict"}, .kind = Kind::Int, .help = "tokens to predict"},
              {.spellings = {"-t", "--threads"}, .kind = Kind::Int, .help = "threads", .default_value = "4"},
              {.spellings = {"--temp"}, .kind = Kind::Float, .help = "temperature", .default_value = "0.8"},
              {.spellings = {"-s", "--seed"}, .kind = Kind::Int, .help = "seed", .default_value = "-1"},
              {.spellings = {"-v", "--verbose"}, .kind = Kind::Flag, .help = "log more"},
              {.spellings = {"--lora"}, .kind = Kind::StringList, .help = "adapter file"},
          },
      .positionals = {{.name = "prompt", .help = "the prompt", .required = false}},
  };
}

Command with_required_positional() {
  return {.name = "quantize",
          .summary = "Quantize a model.",
          .positionals = {{.name = "input", .help = "source"}, {.name = "output", .help = "destination"}}};
}

Args parse(const std::vector<std::string>& args) { return tempra::cli::parse(generate_like(), args); }

// The message of the UsageError that parsing `args` throws; fails the test if none.
std::string usage_error(const Command& command, const std::vector<std::string>& args) {
  try {
    tempra::cli::parse(command, args);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}
std::string usage_error(const std::vector<std::string>& args) { return usage_error(generate_like(), args); }

TEST(args, parses_llama_cpp_multi_letter_short_options) {
  Args a = parse({"-m", "model.gguf", "-ngl", "99", "-c", "4096", "-n", "128", "-t", "8"});
  EXPECT_EQ(a.string("--model"), "model.gguf");
  EXPECT_EQ(a.integer("--n-gpu-layers"), 99);
  EXPECT_EQ(a.integer("-c"), 4096);
  EXPECT_EQ(a.integer("--n-predict"), 128);
  EXPECT_EQ(a.integer("--threads"), 8);
}

TEST(args, any_spelling_looks_up_the_same_option) {
  Args a = parse({"--model", "x", "--threads", "3"});
  EXPECT_EQ(a.string("-m"), "x");
  EXPECT_EQ(a.integer("-t"), 3);
  EXPECT_EQ(a.integer("--threads"), 3);
}

TEST(args, equals_form_and_space_form_agree) {
  Args eq = parse({"--model=m.gguf", "--threads=6", "--temp=0.5", "-ngl=12"});
  Args sp = parse({"--model", "m.gguf", "--threads", "6", "--temp", "0.5", "-ngl", "12"});
  EXPECT_EQ(eq.string("-m"), sp.string("-m"));
  EXPECT_EQ(eq.integer("-t"), sp.integer("-t"));
  EXPECT_EQ(eq.number("--temp"), sp.number("--temp"));
  EXPECT_EQ(eq.integer("-ngl"), sp.integer("-ngl"));
  EXPECT_EQ(eq.integer("-ngl"), 12);
}

TEST(args, equals_form_keeps_later_equals_signs_in_the_value) {
  EXPECT_EQ(parse({"--model=a=b.gguf"}).string("-m"), "a=b.gguf");
}

TEST(args, accepts_negative_number_values) {
  Args a = parse({"-m", "x", "--temp", "-1", "--seed", "-1", "-ngl", "-5"});
  EXPECT_EQ(a.number("--temp"), -1.0);
  EXPECT_EQ(a.integer("--seed"), -1);
  EXPECT_EQ(a.integer("-ngl"), -5);
}

TEST(args, value_is_the_next_token_even_if_it_looks_like_an_option) {
  EXPECT_EQ(parse({"-m", "--weird-file-name"}).string("--model"), "--weird-file-name");
}

TEST(args, negative_number_in_positional_place_is_a_positional) {
  EXPECT_EQ(parse({"-m", "x", "-42"}).positional("prompt"), "-42");
}

TEST(args, lone_dash_is_a_positional) { EXPECT_EQ(parse({"-m", "x", "-"}).positional("prompt"), "-"); }

TEST(args, defaults_apply_when_options_are_absent) {
  Args a = parse({"-m", "x"});
  EXPECT_EQ(a.integer("-c"), 2048);
  EXPECT_EQ(a.integer("--seed"), -1);
  EXPECT_DOUBLE_EQ(a.number("--temp"), 0.8);
  EXPECT_FALSE(a.given("-c"));
  EXPECT_TRUE(a.has("-c"));
  EXPECT_FALSE(a.has("-n"));  // no default, not given
  EXPECT_FALSE(a.flag("--verbose"));
}

TEST(args, flags_are_true_when_present) {
  Args a = parse({"-m", "x", "-v"});
  EXPECT_TRUE(a.flag("--verbose"));
  EXPECT_TRUE(a.given("-v"));
}

TEST(args, repeatable_option_keeps_every_value_in_order) {
  Args a = parse({"-m", "x", "--lora", "a.bin", "--lora=b.bin", "--lora", "c.bin"});
  EXPECT_EQ(a.strings("--lora"), (std::vector<std::string>{"a.bin", "b.bin", "c.bin"}));
  EXPECT_TRUE(parse({"-m", "x"}).strings("--lora").empty());
}

TEST(args, options_and_positionals_may_interleave) {
  Args a = parse({"hello", "-m", "x", "-t", "2"});
  EXPECT_EQ(a.positional("prompt"), "hello");
  EXPECT_EQ(a.integer("-t"), 2);
}

TEST(args, double_dash_ends_options) {
  Args a = parse({"-m", "x", "--", "--threads"});
  EXPECT_EQ(a.positional("prompt"), "--threads");
  EXPECT_FALSE(a.given("--threads"));
}

TEST(args, optional_positional_may_be_absent) {
  Args a = parse({"-m", "x"});
  EXPECT_FALSE(a.has("prompt"));
  EXPECT_EQ(a.positional("prompt"), "");
}

TEST(args, rejects_unknown_option_with_suggestion) {
  std::string msg = usage_error({"-m", "x", "--thread", "4"});
  EXPECT_NE(msg.find("unknown option '--thread'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean '--threads'?"), std::string::npos) << msg;
}

TEST(args, rejects_unknown_option_without_suggestion_when_nothing_is_close) {
  std::string msg = usage_error({"-m", "x", "--completely-different"});
  EXPECT_NE(msg.find("unknown option '--completely-different'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
}

TEST(args, rejects_non_integer_value_naming_the_option) {
  std::string msg = usage_error({"-m", "x", "-t", "four"});
  EXPECT_NE(msg.find("'-t'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("integer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'four'"), std::string::npos) << msg;
  EXPECT_NE(usage_error({"-m", "x", "-c", "4096k"}).find("'4096k'"), std::string::npos);
  EXPECT_NE(usage_error({"-m", "x", "-c", "1.5"}).find("integer"), std::string::npos);
}

TEST(args, rejects_out_of_range_integer) {
  EXPECT_NE(usage_error({"-m", "x", "-n", "99999999999999999999"}).find("range"), std::string::npos);
}

TEST(args, rejects_non_float_value_naming_the_option) {
  std::string msg = usage_error({"-m", "x", "--temp", "hot"});
  EXPECT_NE(msg.find("'--temp'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'hot'"), std::string::npos) << msg;
  EXPECT_NE(usage_error({"-m", "x", "--temp", "nan"}).find("finite"), std::string::npos);
}

TEST(args, rejects_missing_value_naming_the_option) {
  std::string msg = usage_error({"-m", "x", "-ngl"});
  EXPECT_NE(msg.find("'-ngl' needs a value"), std::string::npos) << msg;
}

TEST(args, rejects_value_given_to_a_flag) {
  EXPECT_NE(usage_error({"-m", "x", "--verbose=yes"}).find("takes no value"), std::string::npos);
}

TEST(args, rejects_duplicate_non_repeatable_option_even_under_another_spelling) {
  std::string msg = usage_error({"-m", "x", "-t", "2", "--threads", "3"});
  EXPECT_NE(msg.find("'--threads' given more than once"), std::string::npos) << msg;
  EXPECT_NE(usage_error({"-m", "x", "-v", "-v"}).find("more than once"), std::string::npos);
}

TEST(args, missing_required_option_is_an_error) {
  std::string msg = usage_error({"-t", "2"});
  EXPECT_NE(msg.find("missing required option -m/--model"), std::string::npos) << msg;
}

TEST(args, missing_required_positional_is_an_error) {
  std::string msg = usage_error(with_required_positional(), {"in.gguf"});
  EXPECT_NE(msg.find("missing required argument <output>"), std::string::npos) << msg;
  Args a = tempra::cli::parse(with_required_positional(), {"in.gguf", "out.gguf"});
  EXPECT_EQ(a.positional("input"), "in.gguf");
  EXPECT_EQ(a.positional("output"), "out.gguf");
}

TEST(args, rejects_unexpected_positional) {
  std::string msg = usage_error({"-m", "x", "one", "two"});
  EXPECT_NE(msg.find("unexpected argument 'two'"), std::string::npos) << msg;
}

TEST(args, help_flag_is_accepted_without_required_arguments) {
  EXPECT_TRUE(parse({"--help"}).help_requested);
  EXPECT_TRUE(tempra::cli::parse(with_required_positional(), {"-h"}).help_requested);
  EXPECT_FALSE(parse({"-m", "x"}).help_requested);
}

TEST(args, help_lists_every_spelling) {
  const Command c = generate_like();
  const std::string text = tempra::cli::help(c, "tempra");
  for (const auto& option : c.options)
    for (const auto& spelling : option.spellings)
      EXPECT_NE(text.find(spelling), std::string::npos) << spelling << " missing from:\n" << text;
  EXPECT_NE(text.find("-h, --help"), std::string::npos);
  EXPECT_NE(text.find("usage: tempra generate [options] [prompt]"), std::string::npos) << text;
  EXPECT_NE(text.find("(default: 2048)"), std::string::npos) << text;
  EXPECT_NE(text.find("(required)"), std::string::npos) << text;
  EXPECT_NE(text.find("-m, --model FILE"), std::string::npos) << text;
}

TEST(args, help_aligns_the_description_column) {
  const std::string text = tempra::cli::help(generate_like(), "tempra");
  // Every option row's description starts in the same column.
  std::size_t column = std::string::npos;
  std::size_t pos = text.find("options:\n") + 9;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end - pos);
    std::size_t gap = line.find("  ", 2);
    ASSERT_NE(gap, std::string::npos) << line;
    std::size_t start = line.find_first_not_of(' ', gap);
    if (column == std::string::npos) column = start;
    EXPECT_EQ(start, column) << line;
    pos = end + 1;
  }
}

TEST(args, closest_suggests_only_within_edit_distance_two) {
  const std::vector<std::string> names = {"version", "help", "generate"};
  EXPECT_EQ(tempra::cli::closest("verison", names), "version");
  EXPECT_EQ(tempra::cli::closest("hlep", names), "help");
  EXPECT_EQ(tempra::cli::closest("quantize", names), "");
}

TEST(args, malformed_table_is_a_logic_error_not_a_usage_error) {
  Command dup = {.name = "x", .summary = "", .options = {{.spellings = {"-t"}, .kind = Kind::Int, .help = ""},
                                                         {.spellings = {"-t"}, .kind = Kind::Int, .help = ""}}};
  EXPECT_THROW(tempra::cli::parse(dup, {}), std::logic_error);
  Command bad_default = {
      .name = "x", .summary = "", .options = {{.spellings = {"-t"}, .kind = Kind::Int, .help = "", .default_value = "many"}}};
  EXPECT_THROW(tempra::cli::parse(bad_default, {}), std::logic_error);
  Command reserved = {.name = "x", .summary = "", .options = {{.spellings = {"--help"}, .kind = Kind::Flag, .help = ""}}};
  EXPECT_THROW(tempra::cli::parse(reserved, {}), std::logic_error);
}

TEST(args, reading_an_undeclared_or_mistyped_option_is_a_logic_error) {
  Args a = parse({"-m", "x"});
  EXPECT_THROW((void)a.integer("--nope"), std::logic_error);
  EXPECT_THROW((void)a.string("-t"), std::logic_error);    // -t is an Int
  EXPECT_THROW((void)a.integer("-n"), std::logic_error);   // no value, no default
}

}  // namespace
