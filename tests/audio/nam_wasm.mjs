// tests/audio/nam_wasm.mjs: runs profiles through NAM's reference core compiled to WebAssembly
// (@opendaw/nam-wasm, installed by tools/oracle/install.sh), the oracle of nam_oracle_test.
//
//   node nam_wasm.mjs WASM_DIST_DIR JOBS_FILE
//
// JOBS_FILE is a text file, one job per line: `MODEL.nam IN.f32 OUT.f32 BLOCK`. Each job loads
// the profile into a fresh instance at 48 kHz (the core resets and prewarms it on load), feeds
// IN (raw little-endian float32) in blocks of BLOCK samples and writes the output as raw float32.
// Exits 3 naming the job whose profile the core refused.
import fs from 'node:fs';
import path from 'node:path';

const [dist, jobsFile] = process.argv.slice(2);
const { default: createModule } = await import(path.resolve(dist, 'nam.js'));
const core = await createModule({ wasmBinary: fs.readFileSync(path.join(dist, 'nam.wasm')) });
core._nam_setSampleRate(48000);

for (const line of fs.readFileSync(jobsFile, 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const [model, inPath, outPath, blockText] = line.trim().split(/\s+/);
  const block = Number(blockText);
  core._nam_setMaxBufferSize(block);
  const id = core._nam_createInstance();
  const text = fs.readFileSync(model, 'utf8');
  const bytes = core.lengthBytesUTF8(text) + 1;
  const json = core._malloc(bytes);
  core.stringToUTF8(text, json, bytes);
  const loaded = core._nam_loadModel(id, json);
  core._free(json);
  if (!loaded) {
    console.error(`nam_wasm: the core refused ${model}`);
    process.exit(3);
  }
  const raw = fs.readFileSync(inPath);
  const input = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
  const output = new Float32Array(input.length);
  const inPtr = core._malloc(block * 4), outPtr = core._malloc(block * 4);
  for (let at = 0; at < input.length; at += block) {
    const n = Math.min(block, input.length - at);
    core.HEAPF32.set(input.subarray(at, at + n), inPtr >> 2);
    core._nam_process(id, inPtr, outPtr, n);
    output.set(core.HEAPF32.subarray(outPtr >> 2, (outPtr >> 2) + n), at);
  }
  core._free(inPtr);
  core._free(outPtr);
  core._nam_destroyInstance(id);
  fs.writeFileSync(outPath, Buffer.from(output.buffer));
}
