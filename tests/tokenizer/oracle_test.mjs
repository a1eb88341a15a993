// Compares recur's tokenizer with the real Hugging Face tokenizers (@anush008/tokenizers) on one
// tokenizer: the corpus in corpus/ (whole files, paragraphs, lines) plus random Unicode strings
// from a fixed seed (short ones, and a few long ones for the heap path of BPE). Checks ids (with
// and without special-token parsing, with the post-processor), decode, streaming decode and
// skip-special decode, and decode(encode(x)) == x for byte-level vocabularies.
// Usage: node oracle_test.mjs TOK_DUMP TOKENIZER_DIR [N_RANDOM] [VARIANT]
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'node', 'package.json'));
const { Tokenizer } = require('@anush008/tokenizers');

const [tool, sourceDir, nRandomArg, variant] = process.argv.slice(2);
const nRandom = Number(nRandomArg ?? 3000);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'recur-tok-'));
const json = JSON.parse(fs.readFileSync(path.join(sourceDir, 'tokenizer.json'), 'utf8'));
// Variants exercise pipelines the real files do not use, on a real vocabulary: GPT-2 / GPT-NeoX's
// ByteLevel with its own regex, with and without the prefix space (on a byte-level vocabulary);
// Llama 2's Prepend + Replace normalizer with a Strip decoder, and a Metaspace pre-tokenizer (on
// Gemma's SentencePiece-style vocabulary).
let dir = sourceDir;
if (variant) {
  const sp = '\u2581';
  const variants = {
    gpt2: { pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true } },
    gpt2_prefix: { pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true } },
    llama2: {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: sp },
        { type: 'Replace', pattern: { String: ' ' }, content: sp }] },
      pre_tokenizer: null,
      decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: sp }, content: ' ' },
        { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    },
    splits: {
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: '\\p{P}+' }, behavior: 'Contiguous', invert: false },
        { type: 'Digits', individual_digits: true },
        { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithNext', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] },
    },
    splits_inverted: {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' },
        { type: 'Strip', strip_left: true, strip_right: true }] },
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: '[a-z]+' }, behavior: 'MergedWithPrevious', invert: true },
        { type: 'WhitespaceSplit' },
        { type: 'Split', pattern: { String: '1' }, behavior: 'Removed', invert: false },
        { type: 'Digits', individual_digits: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] },
    },
    nfkd_bert: {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKD' },
        { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }] },
      post_processor: { type: 'BertProcessing', sep: ['<|im_end|>', 151645], cls: ['<|im_start|>', 151644] },
    },
    metaspace: {
      normalizer: null,
      pre_tokenizer: { type: 'Metaspace', replacement: sp, prepend_scheme: 'first', split: true },
      decoder: { type: 'Metaspace', replacement: sp, prepend_scheme: 'first', split: true },
    },
  };
  Object.assign(json, variants[variant]);
  dir = path.join(tmp, 'variant');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(json));
}

// mulberry32: a small seeded generator so every run tests the same strings.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const RANGES = [
  [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x30, 0x39], [0xa0, 0x24f], [0x300, 0x36f],
  [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x5ff], [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f],
  [0x1100, 0x11ff], [0x1e00, 0x1eff], [0x2000, 0x206f], [0x2190, 0x23ff], [0x3040, 0x30ff],
  [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xff00, 0xffef], [0x1f300, 0x1f6ff], [0x1f900, 0x1f9ff],
  [0x1d400, 0x1d7ff], [0x10000, 0x10ffff], [0x80, 0xffff],
];
const PIECES = [' ', '  ', '\n', '\n\n', '\t', '\r\n', '   \n ', "'s", "'LL", '123', '٣٤',
  '\u200d', '\ufe0f', '👩‍👩‍👧', '🇯🇵', 'e\u0301', '\u00a0', '\u3000', '\u0085', '\u180e', '\u2028'];

function randomStrings(n, specials, maxLen, seed) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < n; ++i) {
    const len = 1 + Math.floor(r() * maxLen);
    let s = '';
    while ([...s].length < len) {
      const k = r();
      if (k < 0.15) {
        s += PIECES[Math.floor(r() * PIECES.length)];
      } else if (k < 0.18 && specials.length) {
        s += specials[Math.floor(r() * specials.length)];
      } else {
        const [lo, hi] = RANGES[Math.floor(r() * RANGES.length)];
        let cp = lo + Math.floor(r() * (hi - lo + 1));
        if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41;
        s += String.fromCodePoint(cp);
      }
    }
    out.push(s);
  }
  return out;
}

function corpusStrings() {
  const dirPath = path.join(here, 'corpus');
  const out = [];
  for (const f of fs.readdirSync(dirPath).sort()) {
    const text = fs.readFileSync(path.join(dirPath, f), 'utf8');
    out.push(text, ...text.split(/\n\s*\n/), ...text.split('\n'));
  }
  return [...new Set(out)];
}

const specials = json.added_tokens.slice(0, 40).map((t) => t.content);
// Short strings, and a few long ones (long words take BPE's heap path).
const inputs = [...corpusStrings(), ...randomStrings(nRandom, specials, 40, 20261129),
  ...randomStrings(Math.ceil(nRandom / 100), specials, 2000, 7), 'x'.repeat(5000),
  '\u4e00'.repeat(700), ''];

fs.writeFileSync(path.join(tmp, 'in.json'), JSON.stringify(inputs));
execFileSync(tool, [dir, path.join(tmp, 'in.json'), path.join(tmp, 'out.json')], { stdio: 'inherit' });
const ours = JSON.parse(fs.readFileSync(path.join(tmp, 'out.json'), 'utf8'));

const oracle = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
// HF's encode_special_tokens: the same file without its special added tokens.
const plainJson = { ...json, added_tokens: json.added_tokens.filter((t) => !t.special) };
fs.writeFileSync(path.join(tmp, 'plain.json'), JSON.stringify(plainJson));
const plain = Tokenizer.fromFile(path.join(tmp, 'plain.json'));
fs.rmSync(tmp, { recursive: true });

// decode(encode(x)) == x holds for byte-level vocabularies unless a prefix space is added.
const byteLevel = JSON.stringify(json.decoder ?? {}).includes('"ByteLevel"') &&
  !JSON.stringify(json.pre_tokenizer ?? {}).includes('"add_prefix_space":true') &&
  !['splits_inverted', 'nfkd_bert'].includes(variant);  // they rewrite the text
const nfc = JSON.stringify(json.normalizer ?? {}).includes('"NFC"');
let failures = 0;
function fail(kind, text, got, want) {
  if (process.env.RECUR_ORACLE_DIFF && Array.isArray(got)) {
    let k = 0;
    while (k < got.length && got[k] === want[k]) ++k;
    console.log(`first difference at id ${k}: recur ${JSON.stringify(got.slice(k, k + 6).map((i) => oracle.idToToken(i)))} oracle ${JSON.stringify(want.slice(k, k + 6).map((i) => oracle.idToToken(i)))}`);
  }
  if (++failures <= 15) {
    console.log(`MISMATCH ${kind} on ${JSON.stringify(text).slice(0, 300)}\n  recur:  ${JSON.stringify(got).slice(0, 400)}\n  oracle: ${JSON.stringify(want).slice(0, 400)}`);
  }
}
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

for (let i = 0; i < inputs.length; ++i) {
  const text = inputs[i];
  const ids = [...(await oracle.encode(text, null, { addSpecialTokens: false })).getIds()];
  if (!same(ours.encode[i], ids)) fail('encode', text, ours.encode[i], ids);
  const withPost = [...(await oracle.encode(text, null, { addSpecialTokens: true })).getIds()];
  if (!same(ours.encode_addspecial[i], withPost)) fail('encode add_special_tokens', text, ours.encode_addspecial[i], withPost);
  // plain renumbers the added tokens it keeps: map its tokens back to ids by their strings.
  const plainTokens = (await plain.encode(text, null, { addSpecialTokens: false })).getTokens();
  const noSpecial = plainTokens.map((t) => oracle.tokenToId(t));
  if (!same(ours.encode_nospecial[i], noSpecial)) fail('encode parse_special=false', text, ours.encode_nospecial[i], noSpecial);
  const dec = await oracle.decode(ids, false);
  if (ours.decode[i] !== dec) fail('decode', text, ours.decode[i], dec);
  if (ours.stream[i] !== dec) fail('streaming decode', text, ours.stream[i], dec);
  const decSkip = await oracle.decode(ids, true);
  if (ours.decode_skip[i] !== decSkip) fail('decode skip_special', text, ours.decode_skip[i], decSkip);
  if (byteLevel) {
    const want = nfc ? text.normalize('NFC') : text;
    if (ours.decode[i] !== want) fail('decode(encode(x)) == x', text, ours.decode[i], want);
  }
}
const name = path.basename(sourceDir) === 'models' ? path.basename(path.dirname(sourceDir)) : sourceDir;
console.log(`${name}${variant ? ` (${variant})` : ''}: ${inputs.length} strings, ${failures} mismatches`);
process.exit(failures ? 1 : 0);
