// A full queue refuses at once with 503 and Retry-After, while /health and /metrics stay
// responsive; what was accepted completes.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { makeModel, startServer } from './harness.mjs';

let server;
before(async () => {
  server = await startServer(makeModel('qwen3_5'), ['--parallel', '1', '--max-queue', '1']);
});
after(async () => { await server?.stop(); });

// A long request runs to max_tokens whatever the model answers (ignore_eos): its end-of-turn
// token may come early on another CPU, whose kernels' greedy tokens differ.
const body = (max_tokens) => JSON.stringify({
  model: 'qwen3_5', max_tokens, temperature: 0, ignore_eos: max_tokens > 100,
  messages: [{ role: 'user', content: 'Write a very long story.' }],
});

test('requests beyond --parallel + --max-queue get 503 with Retry-After at once', async () => {
  const controller = new AbortController();
  const running = fetch(`${server.base}/v1/chat/completions`,
                        { method: 'POST', body: body(7000), signal: controller.signal });
  // Wait until the first one is active, then fill the one queue place.
  for (let i = 0; i < 200; i++) {
    const text = await (await fetch(`${server.base}/metrics`)).text();
    if (/^recur_active_sequences 1$/m.test(text)) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const queued = fetch(`${server.base}/v1/chat/completions`, { method: 'POST', body: body(4) });
  await new Promise((r) => setTimeout(r, 100));
  const t0 = Date.now();
  const refused = await fetch(`${server.base}/v1/chat/completions`, { method: 'POST', body: body(4) });
  assert.equal(refused.status, 503);
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  assert.match((await refused.json()).error.message, /--max-queue/);
  assert.ok(Date.now() - t0 < 2000, 'refused at once');
  assert.equal((await fetch(`${server.base}/health`)).status, 200);
  controller.abort();
  await running.catch(() => {});
  const q = await queued;
  assert.equal(q.status, 200);
  assert.equal((await q.json()).object, 'chat.completion');
});
