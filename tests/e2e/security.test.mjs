// Exposure and privacy: the server binds loopback unless told otherwise, every route but /health
// needs the API key when one is set, no request field names a file, and logs carry no prompt or
// completion text unless --log-prompts says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { RECUR, makeModel, startServer } from './harness.mjs';

const canConnect = (host, port) => new Promise((resolve) => {
  const s = connect({ host, port }, () => { s.destroy(); resolve(true); });
  s.on('error', () => resolve(false));
});

test('binds 127.0.0.1 by default: not reachable on the machine\'s other addresses', async () => {
  const proc = spawn(RECUR, ['serve', '-m', makeModel('mamba2'), '--port', '0'],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (c) => {
      log += c;
      const m = log.match(/listening on http:\/\/([\d.]+):(\d+)/);
      if (m) resolve({ host: m[1], port: Number(m[2]) });
    });
    proc.on('exit', (code) => reject(new Error(`exited ${code}: ${log}`)));
  });
  try {
    assert.equal(port.host, '127.0.0.1');
    assert.ok(await canConnect('127.0.0.1', port.port));
    const others = Object.values(networkInterfaces()).flat()
      .filter((a) => a.family === 'IPv4' && !a.internal).map((a) => a.address);
    for (const addr of others) assert.equal(await canConnect(addr, port.port), false, addr);
  } finally {
    proc.kill('SIGTERM');
  }
});

test('with --api-key every route but /health needs it', async () => {
  const server = await startServer(makeModel('qwen3_5'), ['--api-key', 'sk-right']);
  try {
    const routes = [['GET', '/v1/models'], ['POST', '/v1/chat/completions'],
                    ['POST', '/v1/completions'], ['GET', '/v1/cache/stats'],
                    ['POST', '/v1/cache/reset'], ['GET', '/metrics'], ['GET', '/v1/unknown']];
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], prompt: 'hi',
                                  max_tokens: 2 });
    for (const [method, path] of routes) {
      for (const auth of [undefined, 'Bearer sk-wrong', 'Bearer sk-righ', 'Bearer sk-right2',
                          'sk-right', 'bearer sk-right']) {
        const headers = auth ? { Authorization: auth } : {};
        const r = await fetch(`${server.base}${path}`,
                              { method, headers, body: method === 'POST' ? body : undefined });
        assert.equal(r.status, 401, `${method} ${path} with ${auth}`);
        const e = (await r.json()).error;
        assert.equal(e.code, 'invalid_api_key');
      }
      const ok = await fetch(`${server.base}${path}`, {
        method, headers: { Authorization: 'Bearer sk-right' },
        body: method === 'POST' ? body : undefined });
      assert.equal(ok.status, path === '/v1/unknown' ? 404 : 200, `${method} ${path}`);
      await ok.arrayBuffer();
    }
    assert.equal((await fetch(`${server.base}/health`)).status, 200);
    const stats = await server.stats().catch(() => null);
    assert.equal(stats?.snapshot, undefined, 'stats without the key are refused');
  } finally {
    await server.stop();
  }
});

test('a model name is never a path', async () => {
  const server = await startServer(makeModel('mamba2'));
  try {
    for (const model of ['/etc/passwd', '../../etc/passwd', 'file:///etc/passwd']) {
      const r = await server.json('/v1/completions', {
        method: 'POST', body: JSON.stringify({ model, prompt: 'hi', max_tokens: 1 }) });
      assert.equal(r.status, 404);
      assert.equal(r.body.error.code, 'model_not_found');
      assert.doesNotMatch(JSON.stringify(r.body), /root:/);
    }
  } finally {
    await server.stop();
  }
});

const MARKER = 'zebra-quartz-4471';
async function logAfterTraffic(args) {
  const server = await startServer(makeModel('qwen3_5'), ['--log-level', 'trace', ...args]);
  try {
    const client = server.client();
    await client.chat.completions.create({ model: 'qwen3_5', max_tokens: 3,
      messages: [{ role: 'user', content: `remember ${MARKER}` }] });
    await client.completions.create({ model: 'qwen3_5', prompt: `also ${MARKER}`, max_tokens: 3,
                                      stream: true }).then(async (s) => { for await (const _ of s); });
    await fetch(`${server.base}/v1/chat/completions`, { method: 'POST',
      body: JSON.stringify({ messages: [{ role: 'user', content: MARKER }], temperature: 'hot' }) });
  } finally {
    await server.stop();
  }
  return server.log();
}

test('logs never contain prompt text, even at trace level, unless --log-prompts', async () => {
  const quiet = await logAfterTraffic([]);
  assert.match(quiet, /http method=POST path=\/v1\/chat\/completions status=200/);
  assert.doesNotMatch(quiet, new RegExp(MARKER));
  const loud = await logAfterTraffic(['--log-prompts']);
  assert.match(loud, new RegExp(`prompt id=chatcmpl-\\S+ text=".*remember ${MARKER}`));
  assert.match(loud, new RegExp(`prompt id=cmpl-\\S+ text="also ${MARKER}"`));
  assert.match(loud, /completion id=chatcmpl-\S+ finish=\w+/);
});
