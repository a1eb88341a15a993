// The recur binary's command line: dispatch, --help, option errors that name flag and variable,
// exit codes, SIGTERM while serving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RECUR, makeModel, startServer, tempDir } from './harness.mjs';

const run = (args, env = {}) =>
  spawnSync(RECUR, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60000,
                          killSignal: 'SIGKILL' });

test('top-level help lists the commands; unknown ones are refused', () => {
  const help = run(['--help']);
  assert.equal(help.status, 0);
  for (const c of ['serve', 'run', 'bench', 'make-model', 'tokenize', 'template', 'version']) {
    assert.match(help.stdout, new RegExp(`\\b${c}\\b`));
  }
  const bad = run(['frobnicate']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown command 'frobnicate'/);
  assert.match(run(['version']).stdout, /^recur \d+\.\d+\.\d+/);
});

test('each command has --help with defaults and environment names', () => {
  for (const c of ['serve', 'run', 'bench', 'make-model', 'tokenize', 'template']) {
    const r = run([c, '--help']);
    assert.equal(r.status, 0, c);
    assert.match(r.stdout, /\[env: RECUR_/, c);
  }
  assert.match(run(['serve', '--help']).stdout, /--prompt-cache-snapshot-capacity-bytes/);
});

test('invalid values stop startup with one line naming the flag, variable and value', () => {
  const a = run(['serve', '--parallel', 'many']);
  assert.equal(a.status, 2);
  assert.match(a.stderr, /--parallel \(env RECUR_PARALLEL\): invalid value 'many'/);
  const b = run(['serve'], { RECUR_PROMPT_CACHE_CAPACITY_BYTES: '0' });
  assert.equal(b.status, 2);
  assert.match(b.stderr, /environment variable RECUR_PROMPT_CACHE_CAPACITY_BYTES .*'0'/);
  const c = run(['serve', '--no-such-flag']);
  assert.equal(c.status, 2);
  assert.match(c.stderr, /unknown option '--no-such-flag'/);
  assert.equal(b.stderr.trim().split('\n').length, 1);
});

test('a missing or broken checkpoint is one clear error', () => {
  const r = run(['run', '-m', '/nonexistent/model', '-p', 'hi']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /\/nonexistent\/model/);
  const empty = tempDir('empty');
  const s = run(['serve', '-m', empty, '--port', '0']);
  assert.equal(s.status, 1);
  assert.match(s.stderr, /tokenizer\.json|config\.json/);
});

test('a truncated or corrupt checkpoint, tokenizer or template stops serve with one clear line', () => {
  const damage = {
    'model.safetensors': [(b) => b.subarray(0, b.length >> 1), /model\.safetensors: tensor '.*': data_offsets .* run past the data block/],
    'tokenizer.json': [(b) => b.subarray(0, b.length >> 1), /tokenizer\.json: invalid JSON near byte \d+/],
    'config.json': [() => Buffer.from('{"model_type": "qwen3_5", "hidden_size": "big"}'), /config\.json.*hidden_size/],
    'tokenizer_config.json': [(b) => {
      const cfg = JSON.parse(b.toString());
      cfg.chat_template = '{% for m in messages %}{{ m.content }';
      return Buffer.from(JSON.stringify(cfg));
    }, /chat template: template syntax error at line 1, column \d+/],
  };
  for (const [file, [mangle, message]] of Object.entries(damage)) {
    const dir = join(tempDir('corrupt'), 'model');
    cpSync(makeModel('qwen3_5'), dir, { recursive: true });
    writeFileSync(join(dir, file), mangle(readFileSync(join(dir, file))));
    const r = run(['serve', '-m', dir, '--port', '0']);
    assert.equal(r.status, 1, `${file}: ${r.stderr}`);
    const errors = r.stderr.split('\n').filter((l) => / error /.test(l));
    assert.equal(errors.length, 1, r.stderr);
    assert.match(errors[0], message);
  }
});

test('recur run prints a completion and throughput', () => {
  const r = run(['run', '-m', makeModel('qwen3_5'), '-p', 'Hello', '-n', '5', '--chat']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /prompt \d+ tokens, .* tok\/s prefill \| generated 5 tokens/);
});

test('recur bench measures each --bench-quantize format in turn, against the first', () => {
  const model = makeModel('qwen3');
  const args = ['bench', '-m', model, '--bench-prompts', '16', '--bench-sequences', '1',
                '--bench-seconds', '0.05', '--threads', '1'];
  const r = run([...args, '--bench-quantize', 'none,q4']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\| prefill \| as stored \| 0 \| 16 \| [\d.]+ \| 1\.00 \|/m);
  assert.match(r.stdout, /^\| prefill \| q4 g64 \| 0 \| 16 \| [\d.]+ \| [\d.]+ \|/m);
  assert.match(r.stdout, /^\| decode \| as stored \| 1 \| [\d.]+ \| 1\.00 \|/m);
  assert.match(r.stdout, /^\| decode \| q4 g64 \| 1 \| [\d.]+ \| [\d.]+ \|/m);
  assert.match(r.stdout, /cost \(q4 g64\): .* MB of weights per decode step/);
  const bad = run([...args, '--bench-quantize', 'none,q3']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /--bench-quantize 'none,q3': item 'q3' is not one of none, q8, q4/);
});

test('recur bench --bench-decode-orders gives each order its own decode row', () => {
  const model = makeModel('qwen3');
  const args = ['bench', '-m', model, '--bench-prompts', '16', '--bench-sequences', '1',
                '--bench-seconds', '0.05', '--threads', '1'];
  const r = run([...args, '--bench-decode-orders', '-1,9']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\| decode \| as stored, order -1 \| 1 \| [\d.]+ \| 1\.00 \|/m);
  assert.match(r.stdout, /^\| decode \| as stored, order 9 \| 1 \| [\d.]+ \| 1\.00 \|/m);
  const bad = run([...args, '--bench-decode-orders', '-1,16']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /--bench-decode-orders '-1,16': order 16 is not -1 .* \(at most 15\)/);
});

test('SIGTERM drains and exits 0', async () => {
  const server = await startServer(makeModel('mamba2'));
  assert.equal(await server.stop(), 0);
  assert.match(server.log(), /draining/);
});
