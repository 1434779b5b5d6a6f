// CI check: the integration protocol against its published JSON Schemas, with a real validator
// (Ajv, draft 2020-12). Every line an integration showed in the given run folders
// (`stream.jsonl`) must be a valid integration line; every example line the README and the book
// (`book/src/testing-your-product.md`) give of the protocol, both ways, must be valid too.
//
//   node check-protocol.mjs REPO RUN_DIR...
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const Ajv2020 = require("ajv/dist/2020").default;
const [repo, ...runs] = process.argv.slice(2);
const ajv = new Ajv2020({ strict: false, allErrors: true });
const schema = (name) => ajv.compile(JSON.parse(fs.readFileSync(path.join(repo, "schema", name), "utf8")));
const line = schema("integration-line.schema.json");
const input = schema("integration-input.schema.json");

let failures = 0;
let checked = 0;
function check(validate, value, where) {
  checked += 1;
  if (!validate(value)) {
    failures += 1;
    console.error(`${where}: ${JSON.stringify(value)}: ${ajv.errorsText(validate.errors)}`);
  }
}

for (const run of runs) {
  const rows = fs.readFileSync(path.join(run, "stream.jsonl"), "utf8").split("\n").filter(Boolean);
  if (rows.length === 0) throw new Error(`${run}: the integration showed nothing`);
  rows.forEach((row, i) => check(line, JSON.parse(row).line, `${run}/stream.jsonl:${i + 1}`));
}
// The examples of the README and the book: every `{"type":...}` (input) and `{"shown":...}`
// (output) in backticks.
const book = path.join(repo, "book", "src");
const docs = ["README.md", ...fs.readdirSync(book).filter((f) => f.endsWith(".md")).map((f) => path.join("book", "src", f))];
let inputs = 0;
for (const doc of docs) {
  const text = fs.readFileSync(path.join(repo, doc), "utf8");
  for (const [, example] of text.matchAll(/`(\{"(?:type|shown)":[^`]*\})`/g)) {
    const value = JSON.parse(example);
    if ("type" in value) {
      inputs += 1;
      check(input, value, doc);
    } else check(line, value, doc);
  }
}
if (inputs < 4) throw new Error(`the README and the book show ${inputs} input lines of the protocol, expected its 4 kinds`);
console.log(`protocol: ${checked} lines checked against the schemas, ${failures} invalid`);
process.exit(failures === 0 ? 0 : 1);
