// bench/amp_wasm_bench.mjs: NAM's core compiled to WebAssembly (@opendaw/nam-wasm), real-time
// factor on a profile, for bench/run_amp.sh.
//
//   node amp_wasm_bench.mjs WASM_DIST_DIR MODEL.nam SECONDS BLOCK REPS   -> the median RTF
import fs from 'node:fs';
import path from 'node:path';

const [dist, model, secondsText, blockText, repsText] = process.argv.slice(2);
const seconds = Number(secondsText), block = Number(blockText), reps = Number(repsText);
const { default: createModule } = await import(path.resolve(dist, 'nam.js'));
const core = await createModule({ wasmBinary: fs.readFileSync(path.join(dist, 'nam.wasm')) });
core._nam_setSampleRate(48000);
core._nam_setMaxBufferSize(block);
const id = core._nam_createInstance();
const text = fs.readFileSync(model, 'utf8');
const bytes = core.lengthBytesUTF8(text) + 1, json = core._malloc(bytes);
core.stringToUTF8(text, json, bytes);
if (!core._nam_loadModel(id, json)) { console.error(`the core refused ${model}`); process.exit(3); }
const n = Math.floor(seconds * 48000);
const x = new Float32Array(n);
for (let i = 0; i < n; ++i) x[i] = 0.4 * Math.sin(0.05 * i) * Math.exp(-(i % 24000) / 12000);
const inPtr = core._malloc(block * 4), outPtr = core._malloc(block * 4);
const rtf = [];
for (let r = 0; r < reps; ++r) {
  const start = process.hrtime.bigint();
  for (let at = 0; at < n; at += block) {
    const k = Math.min(block, n - at);
    core.HEAPF32.set(x.subarray(at, at + k), inPtr >> 2);
    core._nam_process(id, inPtr, outPtr, k);
  }
  rtf.push(seconds / (Number(process.hrtime.bigint() - start) / 1e9));
}
rtf.sort((a, b) => a - b);
console.log(rtf[Math.floor(rtf.length / 2)].toFixed(2));
