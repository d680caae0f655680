// tests/serve/clients/load.mjs: N concurrent clients against tempra serve for S seconds, each
// looping over a mix of requests: chat and completions, streamed and not, OpenAI and Anthropic,
// and streams the client abandons after the first chunk (a disconnect). Every answer must be
// well formed; any 5xx, malformed body or network error (other than our own aborts) fails the
// run. Afterwards the server must come back to no busy slot and an empty queue (no leak).
// With TEMPRA_PID, the server's resident memory is sampled after a warm-up and at the end.
//   node load.mjs [--clients 64] [--seconds 20] [--warmup 5] [--max-rss-growth 0.05]
import fs from "node:fs";
import { sseData } from "./sse.mjs";

const args = Object.fromEntries(process.argv.slice(2).map((a, i, all) => a.startsWith("--") ? [a.slice(2), all[i + 1]] : []).filter((x) => x.length));
const clients = Number(args.clients ?? 64), seconds = Number(args.seconds ?? 20);
const warmup = Number(args.warmup ?? 5), maxGrowth = Number(args["max-rss-growth"] ?? 0.05);
const base = process.env.TEMPRA_BASE, model = process.env.TEMPRA_MODEL;
const failures = [];
const counts = {};
const latencies = [];

function rss() {
  if (!process.env.TEMPRA_PID) return null;
  const status = fs.readFileSync(`/proc/${process.env.TEMPRA_PID}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024;
}

async function post(path, body, signal) {
  return fetch(base + path, { method: "POST", headers: { "Content-Type": "application/json" },
                              body: JSON.stringify(body), signal });
}

// Every `data:` payload of an SSE body (the first `limit` only: then the client leaves).
async function events(response, limit = Infinity) {
  const out = [];
  for await (const data of sseData(response, limit)) out.push(data);
  return out;
}

const kinds = {
  async chat() {
    const r = await post("/v1/chat/completions", { model, messages: [{ role: "user", content: "Hi" }], max_tokens: 12 });
    const body = await r.json();
    if (r.status !== 200 || body.object !== "chat.completion" || typeof body.choices[0].message.content !== "string")
      throw new Error(`chat: ${r.status} ${JSON.stringify(body).slice(0, 200)}`);
  },
  async chatStream() {
    const r = await post("/v1/chat/completions", { model, messages: [{ role: "user", content: "Hi" }], max_tokens: 12,
                                                  stream: true, chat_template_kwargs: { enable_thinking: false } });
    if (r.status !== 200) throw new Error(`chatStream: ${r.status} ${await r.text()}`);
    const data = await events(r);
    if (data.at(-1) !== "[DONE]") throw new Error("chatStream: no [DONE]");
    for (const d of data.slice(0, -1)) JSON.parse(d);
  },
  async completion() {
    const r = await post("/v1/completions", { model, prompt: "Question? Answer:", max_tokens: 10 });
    const body = await r.json();
    if (r.status !== 200 || body.choices[0].text !== " Hello from tempra.")
      throw new Error(`completion: ${r.status} ${JSON.stringify(body).slice(0, 200)}`);
  },
  async messagesStream() {
    const r = await post("/v1/messages", { model, max_tokens: 12, stream: true, messages: [{ role: "user", content: "Hi" }] });
    if (r.status !== 200) throw new Error(`messagesStream: ${r.status} ${await r.text()}`);
    const data = (await events(r)).map((d) => JSON.parse(d));
    if (data[0].type !== "message_start" || data.at(-1).type !== "message_stop")
      throw new Error("messagesStream: bad event sequence");
  },
  async disconnect() {  // reads one event, then walks away
    const controller = new AbortController();
    const r = await post("/v1/chat/completions", { model, messages: [{ role: "user", content: "Hi" }], max_tokens: 200,
                                                  stream: true }, controller.signal);
    if (r.status !== 200) throw new Error(`disconnect: ${r.status}`);
    await events(r, 1);
    controller.abort();
  },
  async abortEarly() {  // gives up on a non-streamed answer before it comes
    const controller = new AbortController();
    const pending = post("/v1/chat/completions", { model, messages: [{ role: "user", content: "Hi" }], max_tokens: 50 },
                         controller.signal).then((r) => r.text());
    setTimeout(() => controller.abort(), 20);
    try { await pending; } catch (e) { if (e.name !== "AbortError") throw e; }
  },
};
const names = Object.keys(kinds);

async function client(id, deadline) {
  let n = id;
  while (Date.now() < deadline) {
    const kind = names[n++ % names.length];
    const start = performance.now();
    try {
      await kinds[kind]();
      counts[kind] = (counts[kind] ?? 0) + 1;
      latencies.push(performance.now() - start);
    } catch (e) {
      if (e.name === "AbortError") continue;
      failures.push(`${kind}: ${e.message}`);
    }
  }
}

async function metrics() {
  const text = await (await fetch(base + "/metrics")).text();
  const value = (name) => Number(new RegExp(`^tempra_${name} (\\S+)$`, "m").exec(text)[1]);
  return { busy: value("slots_busy"), queued: value("requests_queued"), decode: value("decode_tokens_per_second") };
}

const start = Date.now();
let rssAfterWarmup = null;
const warm = setTimeout(() => { rssAfterWarmup = rss(); }, warmup * 1000);
await Promise.all(Array.from({ length: clients }, (_, i) => client(i, start + seconds * 1000)));
clearTimeout(warm);
const rssEnd = rss();
let settled = null;
for (let i = 0; i < 100 && !settled; i++) {
  const m = await metrics();
  if (m.busy === 0 && m.queued === 0) settled = m;
  else await new Promise((r) => setTimeout(r, 100));
}
latencies.sort((a, b) => a - b);
const total = Object.values(counts).reduce((a, b) => a + b, 0);
console.log(JSON.stringify({ clients, seconds, requests: total, counts, failures: failures.length,
                             p50_ms: latencies[Math.floor(latencies.length / 2)],
                             p99_ms: latencies[Math.floor(latencies.length * 0.99)],
                             rss_after_warmup: rssAfterWarmup, rss_end: rssEnd }));
let ok = true;
if (failures.length) { console.error("failures:\n" + [...new Set(failures)].slice(0, 20).join("\n")); ok = false; }
if (!settled) { console.error("slots or queue not empty 10 s after the load stopped: a leak"); ok = false; }
if (total < clients) { console.error(`only ${total} requests completed`); ok = false; }
if (rssAfterWarmup && rssEnd > rssAfterWarmup * (1 + maxGrowth)) {
  console.error(`RSS grew from ${rssAfterWarmup} to ${rssEnd} bytes, more than ${maxGrowth * 100}%`);
  ok = false;
}
process.exit(ok ? 0 : 1);
