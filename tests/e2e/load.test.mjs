// Load and slow clients on loopback. Many streaming clients beyond --parallel + --max-queue while
// wrk hammers /health: every request completes or is refused with 503 + Retry-After, /health and
// /metrics keep answering, and afterwards nothing is active and the process is back at its idle
// memory. Clients that stall while sending cannot hold the HTTP workers past --read-timeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { makeModel, startServer } from './harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sanitized = (process.env.RECUR_SANITIZE ?? '') !== '';

function rssAnonKiB(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^RssAnon:\s+(\d+) kB$/m);
  return Number(m[1]);
}

// One streaming chat request, read to the end. Returns 'done' or 'refused'; anything else throws.
async function streamOnce(base, i) {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'qwen3_5', stream: true, max_tokens: 12, temperature: 0.7,
                           seed: i, prompt_cache_key: `client-${i % 16}`,
                           messages: [{ role: 'user', content: `Hello number ${i}, tell me more.` }] }),
  });
  if (r.status === 503) {
    assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
    assert.match((await r.json()).error.message, /--max-queue/);
    return 'refused';
  }
  assert.equal(r.status, 200);
  const text = await r.text();
  assert.match(text, /"finish_reason":"(stop|length)"/);
  assert.ok(text.trimEnd().endsWith('data: [DONE]'), 'the stream ends with [DONE]');
  return 'done';
}

async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(text.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1]);
}

function wrk(url, seconds) {
  return new Promise((resolve, reject) => {
    execFile('wrk', ['-t1', '-c4', `-d${seconds}s`, '--latency', url], (err, stdout) => {
      if (err) reject(err); else resolve(stdout);
    });
  });
}

test('64 streaming clients plus wrk on /health: all complete or are refused cleanly', async () => {
  const server = await startServer(makeModel('qwen3_5'), ['--parallel', '4', '--max-queue', '8']);
  try {
    const pid = server.proc.pid;
    // Warm the process up (scratch buffers, states, thread arenas), then take its idle memory.
    await Promise.all(Array.from({ length: 8 }, (_, i) => streamOnce(server.base, i)));
    await server.warmupsSettled();
    await server.json('/v1/cache/reset', { method: 'POST' });
    const idleKiB = rssAnonKiB(pid);

    const wrkDone = wrk(`${server.base}/health`, 6);
    let stop = false;
    wrkDone.finally(() => { stop = true; });
    const outcomes = { done: 0, refused: 0 };
    const scrapes = [];
    const clients = Array.from({ length: 64 }, async (_, c) => {
      for (let i = 0; !stop; i++) outcomes[await streamOnce(server.base, c * 1000 + i)]++;
    });
    const scraper = (async () => {
      while (!stop) {
        const r = await fetch(`${server.base}/metrics`);
        scrapes.push(r.status);
        await r.text();
        await sleep(200);
      }
    })();
    const report = await wrkDone;
    await Promise.all([...clients, scraper]);

    const requests = Number(report.match(/(\d+) requests in/)[1]);
    assert.ok(requests > 0, report);
    assert.doesNotMatch(report, /Non-2xx or 3xx responses/, report);
    assert.doesNotMatch(report, /Socket errors/, report);
    assert.ok(scrapes.length > 0 && scrapes.every((s) => s === 200), `metrics: ${scrapes}`);
    assert.ok(outcomes.done > 0 && outcomes.refused > 0, JSON.stringify(outcomes));
    const p99 = report.match(/99%\s+(\S+)/)?.[1];
    console.log(`load: ${JSON.stringify(outcomes)}; wrk /health ${requests} requests, p99 ${p99}`);

    for (let i = 0; i < 500 && (await metric(server.base, 'recur_active_sequences')) !== 0; i++) {
      await sleep(20);
    }
    assert.equal(await metric(server.base, 'recur_active_sequences'), 0);
    assert.equal(await metric(server.base, 'recur_queue_depth'), 0);
    await server.warmupsSettled();
    await server.json('/v1/cache/reset', { method: 'POST' });
    const afterKiB = rssAnonKiB(pid);
    console.log(`RssAnon idle ${idleKiB} KiB, after the load ${afterKiB} KiB`);
    // Sanitizer builds hold freed memory in quarantine; LeakSanitizer checks those at exit.
    if (!sanitized) {
      assert.ok(afterKiB <= idleKiB * 1.25 + 16 * 1024,
                `memory after the load ${afterKiB} KiB vs idle ${idleKiB} KiB`);
    }
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('clients that stall mid-request are answered 400 and dropped after the timeouts', async () => {
  // A stalled request holds its worker for at most --read-timeout, then keep-alive's wait.
  const server = await startServer(makeModel('mamba2'), ['--http-threads', '4', '--read-timeout',
                                                         '1s', '--keep-alive-timeout', '1s']);
  try {
    // Twice as many stalled connections as workers: half wait for a worker.
    const answers = [];
    for (let i = 0; i < 8; i++) {
      const s = connect({ host: '127.0.0.1', port: server.port });
      let got = '';
      s.on('data', (d) => { got += d; });
      s.on('error', () => {});
      s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"mes');
      answers.push(new Promise((resolve) => s.on('close', () => resolve(got))));
    }
    await sleep(100);
    const health = await fetch(`${server.base}/health`);
    assert.equal(health.status, 200);
    for (const got of await Promise.all(answers)) {
      assert.match(got, /^HTTP\/1\.1 400 /);
      assert.match(got, /malformed HTTP request/);
    }
  } finally {
    await server.stop();
  }
});
