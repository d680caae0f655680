// tests/serve/clients/anthropic.test.mjs: tempra serve's /v1/messages through the official
// `@anthropic-ai/sdk` client, on the scripted model of tests/serve/run_client_tests.sh (a chat
// prompt thinks "Let me think" when thinking is on, then calls get_weather with {"n": 42} in
// Qwen3's tool-call format).
import { test } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ baseURL: process.env.TEMPRA_BASE, apiKey: "unused", maxRetries: 0 });
const model = process.env.TEMPRA_MODEL;
const tools = [{ name: "get_weather", description: "Weather by station number",
                 input_schema: { type: "object", properties: { n: { type: "integer" } } } }];

test("a message without tools is text", async () => {
  const m = await client.messages.create({ model, max_tokens: 64, system: "Be brief.",
                                           messages: [{ role: "user", content: "Hi" }] });
  assert.equal(m.type, "message");
  assert.equal(m.role, "assistant");
  assert.equal(m.content[0].type, "text");
  assert.match(m.content[0].text, /get_weather/);
  assert.equal(m.stop_reason, "end_turn");
  assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens === 16);
});

test("max_tokens and stop_sequences end a message with their reasons", async () => {
  const short = await client.messages.create({ model, max_tokens: 2, messages: [{ role: "user", content: "Hi" }] });
  assert.equal(short.stop_reason, "max_tokens");
  const stopped = await client.messages.create({ model, max_tokens: 64, stop_sequences: ["get_weather"],
                                                 messages: [{ role: "user", content: "Hi" }] });
  assert.equal(stopped.stop_reason, "stop_sequence");
  assert.equal(stopped.stop_sequence, "get_weather");
  assert.doesNotMatch(stopped.content[0].text, /get_weather/);
});

test("streaming gives the event sequence and a final message", async () => {
  const stream = client.messages.stream({ model, max_tokens: 64, messages: [{ role: "user", content: "Hi" }] });
  const events = [];
  stream.on("streamEvent", (e) => events.push(e.type));
  const m = await stream.finalMessage();
  assert.equal(events[0], "message_start");
  assert.equal(events.at(-1), "message_stop");
  assert.ok(events.includes("content_block_delta"));
  assert.match(m.content[0].text, /get_weather/);
});

test("a tool call is a tool_use block", async () => {
  const m = await client.messages.create({ model, max_tokens: 64, tools,
                                           messages: [{ role: "user", content: "Weather at 42?" }] });
  assert.equal(m.stop_reason, "tool_use");
  const use = m.content.find((b) => b.type === "tool_use");
  assert.equal(use.name, "get_weather");
  assert.deepEqual(use.input, { n: 42 });
  assert.match(use.id, /^toolu_/);
});

test("a streamed tool call arrives as input_json_delta and parses", async () => {
  const stream = client.messages.stream({ model, max_tokens: 64, tools,
                                          messages: [{ role: "user", content: "Weather at 42?" }] });
  const m = await stream.finalMessage();
  assert.equal(m.stop_reason, "tool_use");
  const use = m.content.find((b) => b.type === "tool_use");
  assert.deepEqual(use.input, { n: 42 });
});

test("with thinking enabled, a thinking block comes before the tool_use, streamed too", async () => {
  const request = { model, max_tokens: 64, tools, thinking: { type: "enabled", budget_tokens: 1024 },
                    messages: [{ role: "user", content: "Weather at 42?" }] };
  const m = await client.messages.create(request);
  assert.deepEqual(m.content.map((b) => b.type), ["thinking", "tool_use"]);
  assert.equal(m.content[0].thinking, "Let me think");
  const streamed = await client.messages.stream(request).finalMessage();
  assert.deepEqual(streamed.content.map((b) => b.type), ["thinking", "tool_use"]);
  assert.equal(streamed.content[0].thinking, "Let me think");
  assert.deepEqual(streamed.content[1].input, { n: 42 });
});

test("tool results go back through the template", async () => {
  const m = await client.messages.create({
    model, max_tokens: 4, tools,
    messages: [
      { role: "user", content: "Weather at 42?" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { n: 42 } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] },
    ],
  });
  assert.equal(m.type, "message");
});

test("errors come in Anthropic's shape", async () => {
  await assert.rejects(
    client.messages.create({ model, messages: [{ role: "user", content: "Hi" }] }),
    (e) => e.status === 400 && e.error.type === "error" && e.error.error.type === "invalid_request_error" &&
           /max_tokens/.test(e.error.error.message));
  await assert.rejects(
    client.messages.create({ model, max_tokens: 5, messages: [{ role: "user", content: [{ type: "image" }] }] }),
    (e) => e.status === 400 && /not supported/.test(e.error.error.message));
});
