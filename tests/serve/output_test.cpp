// tests/serve/output_test.cpp: splitting the model's text into reasoning, answer and tool calls
// (serve/job.h's OutputSplitter), with tags and blocks cut anywhere between pushes, and the
// request-field readers' errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tempra/serve/job.h"
#include "tempra/serve/request_fields.h"

namespace tempra::serve {
namespace {

using K = llm::TextKind;

struct Piece {
  std::string text;
  K kind;
};

std::vector<JobEvent> split(bool reasoning, bool tools, const std::vector<Piece>& pieces) {
  OutputSplitter s(reasoning, tools);
  std::vector<JobEvent> out;
  const std::function<void(JobEvent)> sink = [&](JobEvent e) {
    if (!out.empty() && out.back().kind == e.kind && e.kind != JobEvent::Kind::tool_call)
      out.back().text += e.text;
    else
      out.push_back(std::move(e));
  };
  for (const Piece& p : pieces) s.push(p.text, p.kind, sink);
  s.finish(sink);
  return out;
}

TEST(OutputSplitter, thinking_becomes_reasoning_and_template_whitespace_is_dropped) {
  const auto out = split(true, false,
                         {{"<think>", K::think_open}, {"\nhm", K::thinking}, {"m", K::thinking},
                          {"</think>", K::think_close}, {"\n\n", K::content}, {"The answer", K::content},
                          {" is 4.", K::content}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, JobEvent::Kind::reasoning);
  EXPECT_EQ(out[0].text, "hmm");
  EXPECT_EQ(out[1].kind, JobEvent::Kind::content);
  EXPECT_EQ(out[1].text, "The answer is 4.");
}

TEST(OutputSplitter, raw_text_passes_untouched) {
  const auto out = split(false, false, {{" Hello", K::content}, {"<think>", K::think_open}, {"x", K::thinking}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, " Hello<think>x");
}

TEST(OutputSplitter, a_tool_call_cut_anywhere_is_parsed) {
  const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, \"</x>\"]}}\n</tool_call>";
  for (size_t cut1 = 1; cut1 < call.size(); cut1 += 5) {
    const size_t cut2 = std::min(call.size() - 1, cut1 + 7);
    const auto out = split(true, true, {{"Sure. ", K::content},
                                        {call.substr(0, cut1), K::content},
                                        {call.substr(cut1, cut2 - cut1), K::content},
                                        {call.substr(cut2), K::content}});
    ASSERT_EQ(out.size(), 2u) << "cut at " << cut1;
    EXPECT_EQ(out[0].text, "Sure. ");
    EXPECT_EQ(out[1].kind, JobEvent::Kind::tool_call);
    EXPECT_EQ(out[1].tool_call.name, "f");
    EXPECT_EQ(json::parse(out[1].tool_call.arguments), json::parse(R"({"a": [1, "</x>"]})"));
    EXPECT_EQ(out[1].tool_call.id.substr(0, 5), "call_");
  }
}

TEST(OutputSplitter, two_calls_in_a_row_and_their_arguments_as_a_string) {
  const auto out = split(true, true,
                         {{"<tool_call>\n{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>\n"
                           "<tool_call>\n{\"name\": \"b\"}\n</tool_call>",
                           K::content}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tool_call.name, "a");
  EXPECT_EQ(out[0].tool_call.arguments, "{\"x\": 1}");
  EXPECT_EQ(out[1].tool_call.name, "b");
  EXPECT_EQ(out[1].tool_call.arguments, "{}");
  EXPECT_NE(out[0].tool_call.id, out[1].tool_call.id);
}

TEST(OutputSplitter, a_block_that_is_not_a_call_stays_text) {
  const auto bad = split(true, true, {{"<tool_call>not json</tool_call> ok", K::content}});
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].text, "<tool_call>not json</tool_call> ok");
  const auto unclosed = split(true, true, {{"x <tool_call>{\"name\": ", K::content}});
  ASSERT_EQ(unclosed.size(), 1u);
  EXPECT_EQ(unclosed[0].text, "x <tool_call>{\"name\": ");
  const auto partial = split(true, true, {{"x <tool_ca", K::content}});
  EXPECT_EQ(partial[0].text, "x <tool_ca");
  const auto off = split(true, false, {{"<tool_call>{\"name\": \"f\"}</tool_call>", K::content}});
  EXPECT_EQ(off[0].kind, JobEvent::Kind::content);
}

TEST(RequestFields, readers_name_the_field_and_the_problem) {
  const json body = json::parse(R"({"a": 1.5, "b": 2.0, "s": 3, "list": ["x", 2], "flag": "yes"})");
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const ApiError& e) {
      return std::string(e.what()) + " | " + e.param;
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { integer_field(body, "a", 0, 10); }), "'a' must be an integer, got 1.5 | a");
  EXPECT_EQ(integer_field(body, "b", 0, 10), 2);
  EXPECT_EQ(message([&] { integer_field(body, "b", 3, 10); }), "'b' must be in [3, 10], got 2.0 | b");
  EXPECT_EQ(message([&] { string_field(body, "s"); }), "'s' must be a string, got number | s");
  EXPECT_EQ(message([&] { strings_field(body, "list", 4); }), "'list[1]' must be a string, got number | list");
  EXPECT_EQ(message([&] { strings_field(body, "list", 1); }), "'list' has 2 entries, at most 1 are allowed | list");
  EXPECT_EQ(message([&] { bool_field(body, "flag"); }), "'flag' must be a boolean, got string | flag");
  EXPECT_FALSE(number_field(body, "absent", 0, 1));
  // Integers are compared as integers: the largest int64 is read exactly, 2^63 and 1e300 refused.
  const json big = json::parse(R"({"max": 9223372036854775807, "over": 9223372036854775808, "far": 1e300})");
  EXPECT_EQ(integer_field(big, "max", INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_NE(message([&] { integer_field(big, "over", INT64_MIN, INT64_MAX); }).find("must be in"), std::string::npos);
  EXPECT_NE(message([&] { integer_field(big, "far", INT64_MIN, INT64_MAX); }).find("must be in"), std::string::npos);
  EXPECT_EQ(dump(json("\xff")), "\"\xef\xbf\xbd\"");  // invalid UTF-8 out: U+FFFD, not an exception
}

}  // namespace
}  // namespace tempra::serve
