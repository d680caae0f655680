// tests/llm/chat_template_test.cpp: the chat-template engine renders byte-exact with Python
// jinja2 (goldens from tools/gen_chat_goldens.py), reports bad templates by line and column,
// falls back to ChatML, and holds its sandbox limits.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tempra/core/error.h"
#include "tempra/llm/template/chat_template.h"

namespace tempra::llm {
namespace {

using nlohmann::ordered_json;

const ordered_json& goldens() {
  static const ordered_json data = [] {
    std::ifstream in(std::string(TEMPRA_GOLDEN_DIR) + "/chat_templates.json");
    std::stringstream text;
    text << in.rdbuf();
    return ordered_json::parse(text.str());
  }();
  return data;
}

// The golden's message dicts as the C++ API takes them.
std::vector<ChatMessage> messages_from(const ordered_json& list) {
  std::vector<ChatMessage> out;
  for (const auto& m : list) {
    ChatMessage message;
    message.role = m.at("role").get<std::string>();
    message.content = m.at("content").get<std::string>();
    if (m.contains("reasoning_content")) message.reasoning_content = m["reasoning_content"].get<std::string>();
    if (m.contains("tool_calls"))
      for (const auto& c : m["tool_calls"]) {
        ToolCall call;
        if (c.contains("id")) call.id = c["id"].get<std::string>();
        call.name = c["function"]["name"].get<std::string>();
        call.arguments = c["function"]["arguments"];
        message.tool_calls.push_back(call);
      }
    out.push_back(message);
  }
  return out;
}

std::string render(const std::string& source, const ordered_json& variables = ordered_json::object(),
                   const jinja::SandboxLimits& limits = {}) {
  return render_template(source, variables, limits);
}

std::string error_of(const std::string& source, const ordered_json& variables = ordered_json::object(),
                     const jinja::SandboxLimits& limits = {}) {
  try {
    render(source, variables, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ChatTemplate, qwen3_goldens_render_byte_exact_with_jinja2) {
  const auto& data = goldens();
  ASSERT_GE(data.at("chat_cases").size(), 20u);
  for (const auto& c : data["chat_cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string& source = data["templates"][c["template"].get<std::string>()].get_ref<const std::string&>();
    const auto& o = c["options"];
    ChatTemplateOptions options;
    options.add_generation_prompt = o.value("add_generation_prompt", true);
    if (o.contains("enable_thinking")) options.enable_thinking = o["enable_thinking"].get<bool>();
    if (o.contains("tools")) options.tools = o["tools"];
    options.bos_token = o.value("bos_token", "");
    options.eos_token = o.value("eos_token", "");
    EXPECT_EQ(render_chat(source, messages_from(c["messages"]), options), c["expected"].get<std::string>());
  }
}

TEST(ChatTemplate, feature_goldens_render_byte_exact_with_jinja2) {
  const auto& data = goldens();
  ASSERT_GE(data.at("feature_cases").size(), 10u);
  for (const auto& c : data["feature_cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    EXPECT_EQ(render(c["template"].get<std::string>(), c["variables"]), c["expected"].get<std::string>());
  }
}

TEST(ChatTemplate, parse_errors_name_line_and_column) {
  EXPECT_NE(error_of("ok\n  {{ x ").find("line 2, column 3"), std::string::npos) << error_of("ok\n  {{ x ");
  EXPECT_NE(error_of("{% frobnicate %}").find("unknown tag 'frobnicate'"), std::string::npos);
  EXPECT_NE(error_of("a\n{% for x in xs %}{{ x }}").find("line 2, column 4"), std::string::npos);
  EXPECT_NE(error_of("a\n{% for x in xs %}{{ x }}").find("never closed"), std::string::npos);
  EXPECT_NE(error_of("{{ 1 + }}").find("line 1, column 8"), std::string::npos) << error_of("{{ 1 + }}");
  EXPECT_NE(error_of("{{ (1 }}").find("unexpected '}'"), std::string::npos) << error_of("{{ (1 }}");
  EXPECT_NE(error_of("{# never closed").find("comment"), std::string::npos);
  EXPECT_NE(error_of("{{ 'open }}").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of("{% endif %}").find("unexpected tag 'endif'"), std::string::npos);
  EXPECT_NE(error_of("{{ x @ y }}").find("unexpected character '@'"), std::string::npos);
  EXPECT_NE(error_of("{% if x %}a{% else %}b{% else %}c{% endif %}").find("line 1"), std::string::npos);
}

TEST(ChatTemplate, evaluation_errors_name_line_and_column) {
  EXPECT_NE(error_of("\n\n  {{ x.y.z }}").find("line 3, column"), std::string::npos) << error_of("\n\n  {{ x.y.z }}");
  EXPECT_NE(error_of("{{ raise_exception('no system role') }}").find("no system role"), std::string::npos);
  EXPECT_NE(error_of("{{ 'a' + 1 }}").find("unsupported operand"), std::string::npos);
  EXPECT_NE(error_of("{{ 1 // 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("{{ x|nosuchfilter }}").find("unknown filter 'nosuchfilter'"), std::string::npos);
  EXPECT_NE(error_of("{{ 3|length }}").find("has no len()"), std::string::npos);
}

TEST(ChatTemplate, unparseable_template_falls_back_to_chatml_with_a_warning) {
  std::vector<ChatMessage> messages{{"system", "sys"}, {"user", "hi"}};
  ChatTemplateOptions options;
  for (const std::string bad : {"{% for m in messages %}{{ m.content }}", "{% bogus %}", "{{ messages[ }}", "{{ 1 +* 2 }}"}) {
    RenderedChat chat = render_chat_or_chatml(bad, messages, options);
    EXPECT_EQ(chat.prompt, "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_NE(chat.warning.find("falling back to ChatML"), std::string::npos);
    EXPECT_NE(chat.warning.find("line 1, column"), std::string::npos) << chat.warning;
  }
  options.add_generation_prompt = false;
  EXPECT_EQ(render_chat_or_chatml("{% bogus %}", messages, options).prompt,
            "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n");
  RenderedChat good = render_chat_or_chatml("{{ messages[1].content }}", messages, options);
  EXPECT_EQ(good.prompt, "hi");
  EXPECT_TRUE(good.warning.empty());
}

// The Jinja ChatML that trained vocabs carry renders what the built-in fallback does.
TEST(ChatTemplate, the_chatml_template_renders_as_render_chatml) {
  const std::vector<ChatMessage> messages{{"system", "sys"}, {"user", "hi\nthere"}, {"assistant", "ok"}};
  for (const bool generation_prompt : {true, false}) {
    ChatTemplateOptions options;
    options.add_generation_prompt = generation_prompt;
    const RenderedChat chat = render_chat_or_chatml(chatml_template_source(), messages, options);
    EXPECT_TRUE(chat.warning.empty()) << chat.warning;
    EXPECT_EQ(chat.prompt, render_chatml(messages, generation_prompt));
  }
}

TEST(ChatTemplate, sandbox_limits_stop_huge_loops_and_outputs) {
  jinja::SandboxLimits limits;
  limits.max_loop_iterations = 1000;
  EXPECT_NE(error_of("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", ordered_json::object(), limits)
                .find("loop iterations"),
            std::string::npos);
  EXPECT_NE(error_of("{% for i in range(1000000) %}{% endfor %}").find("range()"), std::string::npos);
  limits = {};
  limits.max_output_bytes = 1000;
  EXPECT_NE(error_of("{% for i in range(500) %}xxxx{% endfor %}", ordered_json::object(), limits).find("output exceeds"), std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000000 }}", ordered_json::object(), limits).find("sandbox limit"), std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(s='ab') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", ordered_json::object(), limits)
                .find("sandbox limit"),
            std::string::npos);
  std::string deep(5000, '(');
  EXPECT_NE(error_of("{{ " + deep + "1" + std::string(5000, ')') + " }}").find("nesting"), std::string::npos);
  std::string nested;
  for (int i = 0; i < 300; ++i) nested += "{% if true %}";
  EXPECT_NE(error_of(nested).find("nesting"), std::string::npos);
}

TEST(ChatTemplate, sandbox_refuses_private_attributes) {
  ordered_json vars = {{"s", "text"}, {"d", {{"k", 1}}}};
  EXPECT_NE(error_of("{{ s.__class__ }}", vars).find("unsafe"), std::string::npos);
  EXPECT_NE(error_of("{{ d.__class__.__mro__ }}", vars).find("unsafe"), std::string::npos);
  EXPECT_NE(error_of("{{ s._private }}", vars).find("unsafe"), std::string::npos);
  EXPECT_EQ(render("{{ d.append is defined }}{{ s.format is defined }}", vars), "FalseFalse");
  EXPECT_NE(error_of("{{ d.keys.__self__ }}", vars).find("unsafe"), std::string::npos);
}

TEST(ChatTemplate, invalid_utf8_in_content_passes_through) {
  std::string bad = "ok \xff\xfe \xc3 end \xe4\xb8";
  std::vector<ChatMessage> messages{{"user", bad}};
  ChatTemplateOptions options;
  const std::string& qwen3 = goldens()["templates"]["qwen3"].get_ref<const std::string&>();
  EXPECT_EQ(render_chat(qwen3, messages, options), "<|im_start|>user\n" + bad + "<|im_end|>\n<|im_start|>assistant\n");
  ordered_json vars = {{"s", bad}};
  EXPECT_EQ(render("{{ s[::-1][::-1] }}|{{ s|length }}|{{ s.strip() }}", vars), bad + "|14|" + bad);
  EXPECT_NO_THROW(render("{{ s|tojson }}{{ s.split() }}{{ s.upper() }}", vars));
  EXPECT_NO_THROW(render_chat_or_chatml("{{ '\xff' }}{% \xfe %}", messages, options));
}

TEST(ChatTemplate, generation_tag_renders_its_body) {
  EXPECT_EQ(render("a{% generation %}b{% endgeneration %}c"), "abc");
}

TEST(ChatTemplate, message_dicts_carry_only_the_fields_that_are_set) {
  ChatMessage plain{"user", "hi"};
  EXPECT_EQ(to_json(plain).dump(), R"({"role":"user","content":"hi"})");
  ChatMessage call{"assistant", ""};
  call.tool_calls.push_back({"id1", "f", {{"b", 1}, {"a", 2}}});
  EXPECT_EQ(to_json(call)["tool_calls"].dump(),
            R"([{"id":"id1","type":"function","function":{"name":"f","arguments":{"b":1,"a":2}}}])");
}

}  // namespace
}  // namespace tempra::llm
