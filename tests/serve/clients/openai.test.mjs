// tests/serve/clients/openai.test.mjs: tempra serve through the official `openai` npm client, on
// the scripted model tests/serve/run_client_tests.sh synthesizes (a prompt ending in "Answer:"
// continues " Hello from tempra."; a chat prompt thinks "Let me think" when thinking is on, then
// calls get_weather with {"n": 42} in Qwen3's tool-call format).
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.TEMPRA_BASE + "/v1", apiKey: "unused", maxRetries: 0 });
const model = process.env.TEMPRA_MODEL;
const noThinking = { chat_template_kwargs: { enable_thinking: false } };
const tools = [{
  type: "function",
  function: { name: "get_weather", description: "Weather by station number",
              parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
}];

test("models lists the served model", async () => {
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [model]);
});

test("chat without streaming returns a message, a finish reason and usage", async () => {
  const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], max_tokens: 5,
                                                   ...noThinking });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(typeof r.choices[0].message.content, "string");
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.equal(r.usage.completion_tokens, 5);
  assert.ok(r.usage.prompt_tokens > 0);
});

test("chat streaming yields deltas that add up, then usage when asked", async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Hi" }], ...noThinking, stream: true,
    stream_options: { include_usage: true },
  });
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.delta.content ?? "";
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  assert.ok(chunks > 3);
  assert.equal(text, '<tool_call>{"name":"get_weather","arguments":{"n":42}}</tool_call>');  // no tools: raw text
  assert.equal(finish, "stop");
  assert.equal(usage.completion_tokens, 16);  // 15 tokens and <|im_end|>
});

test("a tool call is parsed into tool_calls", async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Weather at station 42?" }], tools, ...noThinking,
  });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, "function");
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { n: 42 });
});

test("a streamed tool call arrives as tool_calls deltas", async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Weather at station 42?" }], tools, ...noThinking, stream: true,
  });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    for (const d of choice.delta.tool_calls ?? []) {
      calls[d.index] ??= { id: "", name: "", arguments: "" };
      calls[d.index].id += d.id ?? "";
      calls[d.index].name += d.function?.name ?? "";
      calls[d.index].arguments += d.function?.arguments ?? "";
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  assert.equal(finish, "tool_calls");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, "get_weather");
  assert.deepEqual(JSON.parse(calls[0].arguments), { n: 42 });
});

test("thinking comes back as reasoning_content, apart from the tool call", async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Weather at station 42?" }], tools,
  });
  const message = r.choices[0].message;
  assert.equal(message.reasoning_content, "Let me think");
  assert.equal(message.content, null);
  assert.equal(message.tool_calls[0].function.name, "get_weather");
  const stream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Hi" }], stream: true,
  });
  let reasoning = "", content = "";
  for await (const chunk of stream) {
    reasoning += chunk.choices[0]?.delta?.reasoning_content ?? "";
    content += chunk.choices[0]?.delta?.content ?? "";
  }
  assert.equal(reasoning, "Let me think");
  assert.match(content, /^<tool_call>/);  // no tools given: the call stays text, after the thinking
});

test("the tool's answer goes back through the template", async () => {
  const r = await client.chat.completions.create({
    model, tools, ...noThinking, max_tokens: 4,
    messages: [
      { role: "user", content: "Weather at station 42?" },
      { role: "assistant", content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"n":42}' } }] },
      { role: "tool", tool_call_id: "call_1", content: "sunny" },
    ],
  });
  assert.ok(["stop", "length", "tool_calls"].includes(r.choices[0].finish_reason));
});

test("logprobs come with each token", async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Hi" }], ...noThinking, max_tokens: 3, logprobs: true, top_logprobs: 2,
  });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, 3);
  assert.equal(lp[0].token, "<tool_call>");
  assert.ok(lp[0].logprob > -0.01 && lp[0].logprob <= 0);  // the scripted margin: near certain
  assert.equal(lp[0].top_logprobs.length, 2);
});

test("completions continue a raw prompt, streamed or not", async () => {
  const r = await client.completions.create({ model, prompt: "Question? Answer:", max_tokens: 20 });
  assert.equal(r.choices[0].text, " Hello from tempra.");
  assert.equal(r.choices[0].finish_reason, "stop");
  const stream = await client.completions.create({ model, prompt: "Question? Answer:", max_tokens: 20, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
  assert.equal(text, " Hello from tempra.");
});

test("stop strings cut the text", async () => {
  const r = await client.completions.create({ model, prompt: "Answer:", max_tokens: 20, stop: [" from"] });
  assert.equal(r.choices[0].text, " Hello");
  assert.equal(r.choices[0].finish_reason, "stop");
});

test("responses: text input, and streaming events", async () => {
  const r = await client.responses.create({ model, input: "Hi", instructions: "Be brief.", max_output_tokens: 4,
                                           reasoning: { effort: "none" } });
  assert.equal(r.object, "response");
  assert.equal(r.status, "incomplete");
  assert.ok(r.output_text.length > 0);
  const stream = await client.responses.create({
    model, input: [{ role: "user", content: "Hi" }], max_output_tokens: 4, stream: true, reasoning: { effort: "none" },
  });
  const types = [];
  let text = "";
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "response.output_text.delta") text += event.delta;
  }
  assert.equal(types[0], "response.created");
  assert.ok(types.includes("response.output_text.delta"));
  assert.equal(types.at(-1), "response.incomplete");
  assert.ok(text.length > 0);
});

test("a json_schema response format gives JSON the schema accepts (parsed by the client)", async () => {
  const schema = { type: "object", properties: { ok: { type: "boolean" }, tag: { enum: ["x", "y"] } },
                   required: ["ok", "tag"], additionalProperties: false };
  const r = await client.chat.completions.parse({
    model, messages: [{ role: "user", content: "Answer:" }], max_tokens: 100, seed: 7, ...noThinking,
    response_format: { type: "json_schema", json_schema: { name: "answer", strict: true, schema } },
  });
  const doc = r.choices[0].message.parsed;
  assert.equal(typeof doc.ok, "boolean");
  assert.ok(doc.tag === "x" || doc.tag === "y");
  assert.deepEqual(Object.keys(doc).sort(), ["ok", "tag"]);
});

test("tool_choice required makes the answer a call, named picks the tool", async () => {
  const lookup = { type: "function", function: { name: "lookup", parameters: {
    type: "object", properties: { q: { enum: ["alpha", "beta"] } }, required: ["q"], additionalProperties: false } } };
  const required = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "weather?" }], tools: [...tools, lookup], tool_choice: "required",
    ...noThinking });
  assert.equal(required.choices[0].finish_reason, "tool_calls");
  assert.equal(required.choices[0].message.tool_calls[0].function.name, "get_weather");
  const named = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "weather?" }], tools: [...tools, lookup], max_tokens: 120, seed: 3,
    tool_choice: { type: "function", function: { name: "lookup" } }, ...noThinking });
  const call = named.choices[0].message.tool_calls[0].function;
  assert.equal(call.name, "lookup");
  assert.ok(["alpha", "beta"].includes(JSON.parse(call.arguments).q));
});

test("bad requests are errors naming the field", async () => {
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], temperature: "hot" }),
    (e) => e.status === 400 && e.error.param === "temperature" && /must be a number/.test(e.message));
  await assert.rejects(
    client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "Hi" }] }),
    (e) => e.status === 404 && e.code === "model_not_found");
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "x".repeat(200000) }] }),
    (e) => e.status === 400 && e.code === "context_length_exceeded" && /tokens but the context holds/.test(e.message));
});

test("a body over the limit is 413 in OpenAI's error shape, before the handler runs", async () => {
  const r = await fetch(process.env.TEMPRA_BASE + "/v1/chat/completions", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: "x".repeat(9 << 20),
  });
  assert.equal(r.status, 413);
  assert.match((await r.json()).error.message, /too large/);
});
