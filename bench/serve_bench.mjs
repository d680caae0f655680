// bench/serve_bench.mjs: a serving benchmark for any OpenAI-compatible server (tempra serve,
// llama-server), run by bench/run_serve.sh against both on the same model and machine.
//
// For N concurrent streams (1, 2, 4, 8 by default) each stream asks /v1/completions for
// --tokens tokens after its own ~64-token prompt (different per stream, so no stream reuses
// another's cache), streamed. Reported per N, medians over --reps repetitions:
//   aggregate decode tokens/s: all tokens after each stream's first, over the time from the
//     first stream's first token to the last stream's last token;
//   time to first token (TTFT) p50, inter-token latency (ITL) p50 / p99 over every gap.
// Then prompt reuse: a --prefix-token chat prompt cold (a fresh prefix), then the same prefix
// plus one new user turn; the TTFT of each, and their ratio.
//   node bench/serve_bench.mjs --base http://127.0.0.1:8080 [--streams 1,2,4,8] [--tokens 128]
//        [--reps 3] [--prefix-tokens 2000] [--label tempra]
import { sseData } from "../tests/serve/clients/sse.mjs";

const opt = Object.fromEntries(process.argv.slice(2).map((a, i, all) => a.startsWith("--") ? [a.slice(2), all[i + 1]] : []).filter((x) => x.length));
const base = opt.base ?? "http://127.0.0.1:8080";
const streamsList = (opt.streams ?? "1,2,4,8").split(",").map(Number);
const tokens = Number(opt.tokens ?? 128), reps = Number(opt.reps ?? 3);
const prefixTokens = Number(opt["prefix-tokens"] ?? 2000);
const label = opt.label ?? base;
let salt = Number(opt.salt ?? Date.now() % 100000);

const words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split(" ");
function text(n, seed) {  // ~n tokens of distinct words
  let s = "";
  for (let i = 0; i < n; i++) s += words[(i * 7 + seed * 13 + (i * i) % 5) % words.length] + (i % 11 === 10 ? ". " : " ");
  return `Document ${seed}: ${s}`;
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * q))]; };

// One streamed request: resolves with the arrival time of every token chunk.
async function stream(path, body) {
  const start = performance.now();
  const r = await fetch(base + path, { method: "POST", headers: { "Content-Type": "application/json" },
                                       body: JSON.stringify({ ...body, stream: true }) });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  const times = [];
  for await (const data of sseData(r)) {
    if (data === "[DONE]") continue;
    const c = JSON.parse(data).choices?.[0];
    const piece = c?.text ?? c?.delta?.content ?? c?.delta?.reasoning_content ?? "";
    if (piece.length > 0) times.push(performance.now());
  }
  return { start, times };
}

async function decodeRound(n) {
  const runs = await Promise.all(Array.from({ length: n }, () => stream("/v1/completions", {
    prompt: text(48, salt++), max_tokens: tokens, temperature: 0.8, seed: salt,
  })));
  const first = Math.min(...runs.map((r) => r.times[0]));
  const last = Math.max(...runs.map((r) => r.times.at(-1)));
  const after = runs.reduce((a, r) => a + r.times.length - 1, 0);
  const gaps = runs.flatMap((r) => r.times.slice(1).map((t, i) => t - r.times[i]));
  return { tps: (1000 * after) / (last - first), ttft: median(runs.map((r) => r.times[0] - r.start)), gaps,
           tokens: runs.map((r) => r.times.length) };
}

const rows = [];
await decodeRound(1);  // warm-up
for (const n of streamsList) {
  const rounds = [];
  for (let i = 0; i < reps; i++) rounds.push(await decodeRound(n));
  const gaps = rounds.flatMap((r) => r.gaps);
  rows.push({ streams: n, decode_tps: median(rounds.map((r) => r.tps)), ttft_ms: median(rounds.map((r) => r.ttft)),
              itl_p50_ms: quantile(gaps, 0.5), itl_p99_ms: quantile(gaps, 0.99),
              min_tokens: Math.min(...rounds.flatMap((r) => r.tokens)) });
}

// Prompt reuse: the same long prefix twice, the second time with a new turn after it.
const reuse = [];
for (let i = 0; i < reps; i++) {
  const system = text(Math.round(prefixTokens * 0.55), 900000 + salt++);
  const turn1 = [{ role: "system", content: system }, { role: "user", content: "Summarize." }];
  const cold = await stream("/v1/chat/completions", { messages: turn1, max_tokens: 4, temperature: 0 });
  const turn2 = [...turn1, { role: "assistant", content: "Sure." }, { role: "user", content: "And shorter?" }];
  const warm = await stream("/v1/chat/completions", { messages: turn2, max_tokens: 4, temperature: 0 });
  reuse.push({ cold: cold.times[0] - cold.start, warm: warm.times[0] - warm.start });
}
const cold = median(reuse.map((r) => r.cold)), warm = median(reuse.map((r) => r.warm));
console.log(JSON.stringify({ label, tokens, reps, rows, reuse: { prefix_tokens: prefixTokens, cold_ttft_ms: cold,
                                                                 warm_ttft_ms: warm, speedup: cold / warm } }));
