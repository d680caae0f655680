// tests/llm/json_schema/validate.mjs: ajv judges what json_schema_samples wrote.
//
// usage: node validate.mjs <samples.json> [expected samples per schema]
// Fails (exit 1) when a finished generation (stop reason "end of generation": it ended where the
// grammar may end) does not parse as JSON or does not validate against its schema; when more
// than 1% of a schema's generations are unfinished, or any stopped for another reason than the
// end or the token cap; when there are fewer generations than expected; and when tempra's
// grammar accepts a hand-written document ajv rejects, or the other way round.
// Why unfinished ones are counted, not judged: the model has random weights, and inside an
// unbounded string it can fall into states where the closing quote never reaches the sampler's
// top-k (a seed of the address schema wrote 42,000 characters of one string before the 30,000
// token cap). That is the model's walk, not the grammar's doing; a grammar that could not end
// would leave nearly every generation unfinished, which the 1% bound catches.
import fs from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const [, , path, expectedArg] = process.argv;
const expected = Number(expectedArg ?? 1000);
const all = JSON.parse(fs.readFileSync(path, 'utf8'));
let failures = 0;
const fail = (message) => {
  if (failures++ < 40) console.error(message);
};

for (const [name, entry] of Object.entries(all)) {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  addFormats(ajv);
  const validate = ajv.compile(entry.schema);
  if (entry.samples.length !== expected) fail(`${name}: ${entry.samples.length} generations, expected ${expected}`);
  let valid = 0;
  let unfinished = 0;
  let characters = 0;
  entry.samples.forEach((sample, seed) => {
    characters += sample.text.length;
    if (sample.stop === 'max tokens') {
      unfinished++;
      console.log(`${name} seed ${seed}: unfinished at the token cap (${sample.tokens} tokens, ${sample.text.length} characters)`);
      return;
    }
    if (sample.stop !== 'end of generation') {
      fail(`${name} seed ${seed}: stopped by ${sample.stop}: ${JSON.stringify(sample.text.slice(0, 200))}`);
      return;
    }
    let doc;
    try {
      doc = JSON.parse(sample.text);
    } catch (e) {
      fail(`${name} seed ${seed}: not JSON (${e.message}): ${JSON.stringify(sample.text.slice(0, 200))}`);
      return;
    }
    if (!validate(doc)) {
      fail(`${name} seed ${seed}: ajv rejects ${JSON.stringify(sample.text.slice(0, 200))}: ${ajv.errorsText(validate.errors)}`);
      return;
    }
    valid++;
  });
  let agreed = 0;
  for (const { doc, tempra_accepts } of entry.verdicts) {
    let ajv_accepts = false;
    try {
      ajv_accepts = validate(JSON.parse(doc));
    } catch {
      ajv_accepts = false;
    }
    if (ajv_accepts !== tempra_accepts) {
      fail(`${name}: on ${JSON.stringify(doc)} ajv says ${ajv_accepts ? 'valid' : 'invalid'}, tempra's grammar ${tempra_accepts ? 'accepts' : 'rejects'}`);
    } else {
      agreed++;
    }
  }
  if (unfinished > Math.floor(entry.samples.length / 100)) {
    fail(`${name}: ${unfinished} of ${entry.samples.length} generations unfinished at the token cap (at most 1%)`);
  }
  const mean = entry.samples.length ? (characters / entry.samples.length).toFixed(0) : 0;
  console.log(`${name}: ${valid}/${entry.samples.length - unfinished} finished generations valid, ${unfinished} unfinished (mean ${mean} characters), ` +
              `${agreed}/${entry.verdicts.length} hand-written documents judged alike`);
}
if (failures > 0) {
  console.error(`${failures} failures`);
  process.exit(1);
}
