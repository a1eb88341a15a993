// The prompt cache's disk tier (--prompt-cache-dir) with the real server: a conversation survives
// a restart with the same cached counts and bytes; after SIGKILL mid-writing the next start drops
// the bad files and serves correctly; two replicas behind nginx sharing the directory hand a
// conversation over with a hit; a RAM budget of two conversations keeps ten in flight hitting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, truncateSync, openSync, readSync, writeSync,
         closeSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { makeModel, startServer, tempDir, OpenAI } from './harness.mjs';
import { USER_MESSAGES, generated } from './conversation.mjs';

const FAMILY = 'qwen3_5';  // hybrid: the snapshot store, exact prefixes per session

// One chat turn of `conv` ({ messages, key }) on `server`; returns what the transcript compares.
async function turn(server, conv, t, client = server.client()) {
  conv.messages.push({ role: 'user', content: USER_MESSAGES[t % USER_MESSAGES.length] });
  const data = await client.chat.completions.create({
    model: FAMILY, messages: conv.messages, max_tokens: 10, temperature: 0, logprobs: true,
    prompt_cache_key: conv.key, chat_template_kwargs: { enable_thinking: false },
    ...(conv.salt ? { cache_salt: conv.salt } : {}),
  });
  const choice = data.choices[0];
  conv.messages.push({ role: 'assistant', content: choice.message.content ?? '' });
  return { content: choice.message.content, reasoning: null, logprobs: JSON.stringify(choice.logprobs),
           finish: choice.finish_reason, prompt_tokens: data.usage.prompt_tokens,
           completion_tokens: data.usage.completion_tokens,
           cached_tokens: data.usage.prompt_tokens_details.cached_tokens,
           trace: data.x_recur_cache };  // the body's field (a stream ends with an SSE comment)
}

const newConv = (key) => ({ key, messages: [{ role: 'system', content: 'You are a concise assistant.' }] });

// Waits until warm-ups are done and the disk tier has written everything queued.
async function settled(server) {
  for (let i = 0; i < 3000; i++) {
    const s = await server.stats();
    if (s.warmup.pending === 0 && s.snapshot !== undefined && (!s.disk || s.disk.writes.pending === 0)) return s;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error('did not settle');
}

function entryFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p); else if (p.endsWith('.rpc')) out.push(p);
    }
  };
  walk(dir);
  return out;
}

test('a conversation continued after a restart has the same cached counts and bytes', async () => {
  const model = makeModel(FAMILY);
  // Without a restart: six turns on one server.
  const ref = await startServer(model, ['--prompt-cache-dir', tempDir('disk-ref')]);
  const refConv = newConv('restart');
  const want = [];
  for (let t = 0; t < 6; t++) { want.push(await turn(ref, refConv, t)); await settled(ref); }
  await ref.stop();

  const dir = tempDir('disk-restart');
  const conv = newConv('restart');
  const got = [];
  let server = await startServer(model, ['--prompt-cache-dir', dir]);
  for (let t = 0; t < 3; t++) { got.push(await turn(server, conv, t)); await settled(server); }
  assert.equal(await server.stop(), 0);
  server = await startServer(model, ['--prompt-cache-dir', dir]);
  const start = await server.stats();
  assert.ok(start.disk.indexed_at_start >= 1, JSON.stringify(start.disk));
  for (let t = 3; t < 6; t++) { got.push(await turn(server, conv, t)); await settled(server); }
  const end = await server.stats();
  await server.stop();

  assert.deepEqual(got.map((x) => x.cached_tokens), want.map((x) => x.cached_tokens));
  assert.deepEqual(generated(got), generated(want));
  assert.ok(got[3].cached_tokens > got[2].prompt_tokens, `turn 4 cached ${got[3].cached_tokens}`);
  assert.match(got[3].trace, /tier=disk/);
  assert.ok(end.disk.hits >= 1 && end.disk.dropped_files.corrupt === 0, JSON.stringify(end.disk));
  // The fields docs/prompt-cache.md lists, no more and no fewer.
  assert.deepEqual(Object.keys(end.disk).sort(), [
    'bytes', 'capacity_bytes', 'cleared_entries', 'dir', 'discovered', 'dropped_files', 'enabled',
    'entries', 'evictions', 'hits', 'hits_shared', 'indexed_at_start', 'lookups', 'read_bytes', 'read_failures',
    'read_ms_avg', 'read_ms_max', 'supersedes', 'tokens_reused', 'unwritten_hits', 'writes']);
  assert.deepEqual(Object.keys(end.disk.writes).sort(), [
    'bytes', 'cancelled', 'coalesced', 'done', 'dropped', 'failed', 'oversized', 'pending',
    'pending_bytes']);
  assert.deepEqual(Object.keys(end.disk.dropped_files).sort(), ['corrupt', 'temp', 'vanished']);
});

test('after a restart a new conversation resumes from its tenant\'s shared system prompt on disk', async () => {
  const model = makeModel(FAMILY);
  const dir = tempDir('disk-system');
  let server = await startServer(model, ['--prompt-cache-dir', dir]);
  // The first conversation computes everything and leaves the shared system-prompt entry; the
  // second finds it in RAM: its cached count is the shared boundary's length.
  const first = await turn(server, newConv('system-a'), 0);
  await settled(server);
  const second = await turn(server, newConv('system-b'), 0);
  await settled(server);
  assert.equal(first.cached_tokens, 0, first.trace);
  assert.match(second.trace, /origin=shared/);
  const boundary = second.cached_tokens;
  assert.ok(boundary > 0 && boundary < second.prompt_tokens, second.trace);
  assert.equal(await server.stop(), 0);

  server = await startServer(model, ['--prompt-cache-dir', dir]);
  const restarted = await turn(server, newConv('system-c'), 0);
  await settled(server);
  // Loaded from disk into the shared session in RAM: the next new conversation finds it there.
  const next = await turn(server, newConv('system-d'), 0);
  await settled(server);
  // Another tenant (cache_salt) with the same system prompt sees none of it.
  const salted = await turn(server, { ...newConv('system-e'), salt: 'other-tenant' }, 0);
  const s = await server.stats();
  await server.stop();

  assert.equal(restarted.cached_tokens, boundary, restarted.trace);
  assert.match(restarted.trace, /origin=shared; tier=disk/);
  assert.equal(next.cached_tokens, boundary, next.trace);
  assert.match(next.trace, /origin=shared$/);  // a RAM hit names no tier
  assert.equal(salted.cached_tokens, 0, salted.trace);
  assert.deepEqual(generated([restarted, next, salted]), generated([first, first, first]));
  assert.equal(s.disk.hits_shared, 1, JSON.stringify(s.disk));
  assert.equal(s.snapshot.hits_shared, 1, JSON.stringify(s.snapshot));
});

// The session directories (partition/session) under the model directory `root`.
function sessionDirs(root) {
  const out = [];
  for (const part of readdirSync(root)) {
    if (!statSync(join(root, part)).isDirectory()) continue;
    for (const session of readdirSync(join(root, part))) out.push(join(root, part, session));
  }
  return out;
}

const filesIn = (d, pred) =>
  (existsSync(d) ? readdirSync(d).filter(pred).map((n) => join(d, n)) : []);
const isEntry = (n) => n.endsWith('.rpc');
const isTemp = (n) => n.startsWith('.tmp-');

test('after SIGKILL mid-writing the next start drops exactly the damaged files', async () => {
  const model = makeModel(FAMILY);
  const dir = tempDir('disk-kill');
  // Without shared system-prompt entries, each conversation writes into its own session directory
  // only (the shared session would be a ninth directory, made by the first conversation).
  const args = ['--prompt-cache-dir', dir, '--parallel', '4', '--no-prompt-cache-shared'];
  let server = await startServer(model, args);
  const root = (await server.stats()).disk.dir;
  // Turn 1 of eight conversations, one at a time, so each one's session directory is known.
  const convs = [];
  const sessionDir = [];
  for (let i = 0; i < 8; i++) {
    const before = new Set(sessionDirs(root));
    const c = newConv(`kill-${i}`);
    await turn(server, c, 0);
    await settled(server);
    const added = sessionDirs(root).filter((d) => !before.has(d));
    assert.equal(added.length, 1, `conversation ${i} made ${added.length} session directories`);
    convs.push(c);
    sessionDir.push(added[0]);
  }
  // Heavy writing: six conversations' next turns at once, killed while they run. Conversations 6
  // and 7 stay settled: their files are the ones damaged on purpose below.
  const killedPid = server.proc.pid;
  const inflight = convs.slice(0, 6).map((c) => turn(server, c, 1).catch(() => null));
  await new Promise((res) => setTimeout(res, 150));
  server.proc.kill('SIGKILL');
  await Promise.all(inflight);
  await new Promise((res) => server.proc.exitCode !== null || server.proc.signalCode !== null
    ? res() : server.proc.on('exit', res));

  // Conversation 6: every file truncated by 7 bytes (found at startup: the size is in the header).
  const truncated = filesIn(sessionDir[6], isEntry);
  assert.ok(truncated.length >= 1, 'conversation 6 has files');
  for (const f of truncated) truncateSync(f, statSync(f).size - 7);
  // Conversation 7: one payload byte flipped in every file (found only when read). Its settled
  // files are its boundary and warm-up entries, both prefixes of its next prompt.
  const flipped = filesIn(sessionDir[7], isEntry);
  assert.ok(flipped.length >= 1, 'conversation 7 has files');
  for (const f of flipped) {
    const fd = openSync(f, 'r+');
    const at = statSync(f).size - 3;
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, at);
    writeSync(fd, Buffer.from([b[0] ^ 0xa5]), 0, 1, at);
    closeSync(fd);
  }
  // A dead writer's temp file, as a kill mid-write leaves it (the killed server's host and pid).
  writeFileSync(join(sessionDir[7], `.tmp-${hostname().replace(/[-/]/g, '_')}-${killedPid}-99`),
                'half a write');
  const temps = sessionDirs(root).flatMap((d) => filesIn(d, isTemp));
  const entries = sessionDirs(root).flatMap((d) => filesIn(d, isEntry));

  server = await startServer(model, args);
  const atStart = (await server.stats()).disk;
  assert.equal(atStart.dropped_files.corrupt, truncated.length, JSON.stringify(atStart));
  assert.equal(atStart.dropped_files.temp, temps.length, JSON.stringify(atStart));
  assert.equal(atStart.indexed_at_start, entries.length - truncated.length,
               JSON.stringify(atStart));
  for (const f of [...truncated, ...temps]) {
    assert.ok(!existsSync(f), `${f} was not deleted`);
  }
  for (const f of truncated) assert.ok(server.log().includes(f), `the log does not name ${f}`);
  assert.ok(server.log().includes(`dropped ${truncated.length} corrupt files and ${temps.length}`),
            server.log());

  // Every conversation continues from the history the client holds, with the bytes a cache-off
  // server produces for the same messages.
  const off = await startServer(model, ['--no-prompt-cache']);
  const results = [];
  for (const c of convs) {
    c.messages = c.messages.slice(0, 3);  // system, user, assistant of turn 1
    const offConv = { key: c.key, messages: [...c.messages] };
    const a = await turn(server, c, 1);
    const b = await turn(off, offConv, 1);
    assert.deepEqual(generated([a]), generated([b]), c.key);
    results.push(a);
    await settled(server);
  }
  const after = (await server.stats()).disk;
  await off.stop();
  await server.stop();
  // Conversation 7's lookup read each flipped file, found its checksum wrong and dropped it; it
  // restored nothing. Conversation 6 had nothing left to restore.
  assert.equal(after.dropped_files.corrupt, truncated.length + flipped.length,
               JSON.stringify(after));
  for (const f of flipped) assert.ok(!existsSync(f), `${f} was not deleted`);
  assert.equal(results[6].cached_tokens, 0, results[6].trace);
  assert.equal(results[7].cached_tokens, 0, results[7].trace);
  assert.equal(after.read_failures, 0);
});

const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

test('two replicas sharing the directory behind nginx hand a conversation over with a hit', async () => {
  const model = makeModel(FAMILY);
  const dir = tempDir('disk-shared');
  const replicas = await Promise.all([startServer(model, ['--prompt-cache-dir', dir]),
                                      startServer(model, ['--prompt-cache-dir', dir])]);
  const ngDir = tempDir('disk-nginx');
  const port = await freePort();
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((t) => { mkdirSync(join(ngDir, t)); return `${t}_temp_path ${join(ngDir, t)};`; }).join('\n');
  writeFileSync(join(ngDir, 'nginx.conf'), `
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1; daemon off; pid ${join(ngDir, 'nginx.pid')}; error_log stderr warn;
events { worker_connections 64; }
http { access_log off; ${temp}
  upstream rr { ${replicas.map((r) => `server 127.0.0.1:${r.port};`).join(' ')} }
  server { listen 127.0.0.1:${port}; proxy_http_version 1.1; proxy_set_header Connection "";
           proxy_read_timeout 600s; add_header X-Upstream $upstream_addr always;
           location / { proxy_pass http://rr; } } }`);
  const nginx = spawn('nginx', ['-c', join(ngDir, 'nginx.conf'), '-p', ngDir], { stdio: 'ignore' });
  try {
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      const r = await fetch(`${base}/health`).catch(() => null);
      if (r?.status === 200) break;
      if (i > 200) throw new Error('nginx did not start');
      await new Promise((res) => setTimeout(res, 50));
    }
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-none', maxRetries: 0 });
    const conv = newConv('moving');
    const ups = [];
    const turns = [];
    for (let t = 0; t < 3; t++) {
      const x = await turn(replicas[0], conv, t, client);
      turns.push(x);
      await Promise.all(replicas.map(settled));
      ups.push(x);
    }
    const served = await Promise.all(replicas.map((r) => r.stats()));
    // Round robin sent the turns to both replicas; each follow-up hit the whole previous turn.
    assert.ok(served.every((s) => s.snapshot.lookups >= 1), 'both replicas served turns');
    for (let t = 1; t < turns.length; t++) {
      assert.ok(turns[t].cached_tokens > turns[t - 1].prompt_tokens,
                `turn ${t + 1}: cached ${turns[t].cached_tokens} of ${turns[t].prompt_tokens}`);
    }
    assert.ok(served.some((s) => s.disk.hits >= 1 && s.disk.discovered >= 1),
              JSON.stringify(served.map((s) => s.disk)));
  } finally {
    nginx.kill('SIGQUIT');
    await Promise.all(replicas.map((r) => r.stop()));
  }
});

test('a RAM budget of two conversations keeps ten in flight hitting through the disk', async () => {
  const model = makeModel(FAMILY);
  const dir = tempDir('disk-overflow');
  // Two conversations' entries (boundary + warm-up each) fit in RAM; ten take turns.
  const server = await startServer(model, ['--prompt-cache-dir', dir, '--parallel', '4',
                                           '--prompt-cache-snapshot-max-entries', '4']);
  const convs = Array.from({ length: 10 }, (_, i) => newConv(`overflow-${i}`));
  const results = await Promise.all(convs.map(async (c) => {
    const out = [];
    for (let t = 0; t < 3; t++) {
      out.push(await turn(server, c, t));
      await settled(server);
    }
    return out;
  }));
  const s = await server.stats();
  await server.stop();
  for (const [i, turns] of results.entries()) {
    for (let t = 1; t < turns.length; t++) {
      assert.ok(turns[t].cached_tokens > turns[t - 1].prompt_tokens,
                `conversation ${i} turn ${t + 1}: cached ${turns[t].cached_tokens} of ` +
                `${turns[t].prompt_tokens} (${turns[t].trace})`);
    }
  }
  assert.ok(s.snapshot.evictions.lru > 0, 'RAM evicted');
  assert.ok(s.disk.hits > 0, JSON.stringify(s.disk));
});
