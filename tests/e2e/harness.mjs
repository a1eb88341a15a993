// Shared pieces of the end-to-end tests: generated checkpoints, a real `recur serve` process on a
// free loopback port, the official OpenAI and Anthropic SDKs pointed at it, and the real HF
// tokenizer as oracle.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../node/package.json'));
export const OpenAI = require('openai').default ?? require('openai');
export const Anthropic = require('@anthropic-ai/sdk').default ?? require('@anthropic-ai/sdk');
const { Tokenizer } = require('@anush008/tokenizers');

export const RECUR = process.env.RECUR_BIN ?? join(here, '../../build/bin/recur');

const tempDirs = [];
process.on('exit', () => { for (const d of tempDirs) rmSync(d, { recursive: true, force: true }); });

export function tempDir(tag) {
  const d = mkdtempSync(join(tmpdir(), `recur-e2e-${tag}-`));
  tempDirs.push(d);
  return d;
}

const models = new Map();
// A generated checkpoint of `family` (tiny preset), made once per test process.
export function makeModel(family, extra = []) {
  const key = [family, ...extra].join(' ');
  if (!models.has(key)) {
    const dir = join(tempDir(family), family);
    execFileSync(RECUR, ['make-model', '--family', family, '--preset', 'tiny', '--seed', '7',
                         '--out', dir, ...extra], { stdio: 'pipe' });
    models.set(key, dir);
  }
  return models.get(key);
}

// Starts `recur serve` on port 0 and resolves once /health says ok.
export async function startServer(modelDir, args = [], env = {}) {
  const proc = spawn(RECUR, ['serve', '-m', modelDir, '--port', '0', '--host', '127.0.0.1', ...args],
                     { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 30000);
    proc.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${log}`)); });
  });
  // A server that dies under a test says why: the tail of its log goes to the test's stderr.
  let stopping = false;
  proc.on('exit', (code, signal) => {
    if (!stopping) console.error(`recur serve exited (code ${code}, signal ${signal}):\n${log.slice(-4000)}`);
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  const server = {
    proc, port, base,
    log: () => log,
    client: (opts = {}) => new OpenAI({ baseURL: `${base}/v1`, apiKey: opts.apiKey ?? 'sk-none',
                                        maxRetries: 0, timeout: 120000 }),
    anthropic: (opts = {}) => new Anthropic({ baseURL: base, apiKey: opts.apiKey ?? 'sk-none',
                                              maxRetries: 0, timeout: 120000 }),
    async json(path, init) {
      const r = await fetch(`${base}${path}`, init);
      return { status: r.status, body: await r.json(), headers: r.headers };
    },
    async stats() { return (await this.json('/v1/cache/stats')).body; },
    // Waits until no warm-up is pending (the next turn then finds its prefix stored).
    async warmupsSettled() {
      for (let i = 0; i < 600; i++) {
        const s = await this.stats();
        if (!s.warmup || s.warmup.pending === 0) return s;
        await new Promise((res) => setTimeout(res, 20));
      }
      throw new Error('warm-ups did not settle');
    },
    async stop() {
      if (proc.exitCode !== null) return proc.exitCode;
      stopping = true;
      proc.kill('SIGTERM');
      return await new Promise((res) => proc.on('exit', (code) => res(code)));
    },
  };
  return server;
}

// The HF tokenizer (Rust, via node) over the checkpoint's tokenizer.json: the oracle for counts.
export async function oracleTokenCount(modelDir, text) {
  const tok = Tokenizer.fromFile(join(modelDir, 'tokenizer.json'));
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  return enc.getIds().length;
}
