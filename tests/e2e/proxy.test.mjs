// Two recur replicas behind Debian's nginx on loopback, with session affinity by consistent
// hashing on X-Session-Id (the setup docs/operations.md describes): every turn of a conversation
// lands on the replica that holds its cache, so each follow-up turn reuses the whole previous
// prompt. A round-robin upstream over the same replicas shows what affinity buys.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { makeModel, startServer, tempDir, OpenAI, oracleTokenCount } from './harness.mjs';
import { USER_MESSAGES } from './conversation.mjs';

const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

let replicas = [];
let nginx;
let base;

function nginxConf(dir, port, upstreams) {
  const servers = upstreams.map((p) => `server 127.0.0.1:${p};`).join(' ');
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((t) => { mkdirSync(join(dir, t)); return `${t}_temp_path ${join(dir, t)};`; }).join('\n  ');
  return `
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
daemon off;
pid ${join(dir, 'nginx.pid')};
error_log stderr warn;
events { worker_connections 256; }
http {
  access_log off;
  ${temp}
  upstream recur_affinity { hash $http_x_session_id consistent; ${servers} keepalive 8; }
  upstream recur_round_robin { ${servers} keepalive 8; }
  server {
    listen 127.0.0.1:${port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffering off;
    proxy_read_timeout 600s;
    add_header X-Upstream $upstream_addr always;
    location /rr/ { proxy_pass http://recur_round_robin/; }
    location / { proxy_pass http://recur_affinity; }
  }
}
`;
}

let modelDir;
before(async () => {
  const model = modelDir = makeModel('qwen3_5');
  replicas = await Promise.all([startServer(model), startServer(model)]);
  const dir = tempDir('nginx');
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), nginxConf(dir, port, replicas.map((r) => r.port)));
  nginx = spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  nginx.stderr.on('data', (c) => { log += c; });
  base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r?.status === 200) break;
    if (i > 200 || nginx.exitCode !== null) throw new Error(`nginx did not start: ${log}`);
    await new Promise((res) => setTimeout(res, 50));
  }
});

after(async () => {
  nginx?.kill('SIGQUIT');
  await Promise.all(replicas.map((r) => r.stop()));
});

// One conversation through the proxy; returns per turn: the replica that served it and usage.
async function conversation(prefix, session, turns) {
  const client = new OpenAI({ baseURL: `${base}${prefix}/v1`, apiKey: 'sk-none', maxRetries: 0,
                              defaultHeaders: { 'X-Session-Id': session } });
  const messages = [{ role: 'system', content: 'You are a concise assistant.' }];
  const out = [];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: USER_MESSAGES[t] });
    const { data, response } = await client.chat.completions.create(
      { model: 'qwen3_5', messages, max_tokens: 12, temperature: 0,
        chat_template_kwargs: { enable_thinking: false } }).withResponse();
    out.push({ upstream: response.headers.get('x-upstream'), prompt: data.usage.prompt_tokens,
               cached: data.usage.prompt_tokens_details.cached_tokens });
    messages.push({ role: 'assistant', content: data.choices[0].message.content ?? '' });
    // The warm-up of the next turn runs on the replica that served this one.
    const replica = replicas.find((r) => out.at(-1).upstream === `127.0.0.1:${r.port}`);
    assert.ok(replica, `served by a replica: ${out.at(-1).upstream}`);
    await replica.warmupsSettled();
  }
  return out;
}

// Session ids that the hash sends to each replica (the ring depends on the replicas' ports).
async function sessionsPerReplica(n) {
  const byUpstream = new Map();
  for (let i = 0; i < 64; i++) {
    const id = `session-${i}`;
    const r = await fetch(`${base}/v1/models`, { headers: { 'X-Session-Id': id } });
    await r.arrayBuffer();
    const up = r.headers.get('x-upstream');
    byUpstream.set(up, [...(byUpstream.get(up) ?? []), id]);
  }
  assert.equal(byUpstream.size, 2, 'both replicas take sessions');
  return [...byUpstream.values()].flatMap((ids) => ids.slice(0, n));
}

test('with affinity every turn hits the replica holding the conversation', async () => {
  const sessions = await sessionsPerReplica(3);
  const runs = await Promise.all(sessions.map((s) => conversation('', s, 4)));
  const used = new Set();
  runs.forEach((turns, i) => {
    const upstreams = new Set(turns.map((t) => t.upstream));
    assert.equal(upstreams.size, 1, `${sessions[i]}: ${[...upstreams]}`);
    used.add(turns[0].upstream);
    for (let t = 1; t < turns.length; t++) {
      // The whole previous prompt and reply come from the cache; only the new turn is computed.
      assert.ok(turns[t].cached > turns[t - 1].prompt,
                `${sessions[i]} turn ${t + 1}: cached ${turns[t].cached} of ${turns[t].prompt}`);
    }
  });
  assert.equal(used.size, 2, 'the conversations ran on both replicas');
});

test('without affinity a follow-up turn lands on the other replica and misses', async () => {
  const turns = await conversation('/rr', 'grace', 2);
  assert.notEqual(turns[0].upstream, turns[1].upstream);
  // Its own history is on the other replica: at most the system prompt, which this replica's
  // other conversations of the tenant computed, is reused.
  const shared = await oracleTokenCount(
    modelDir, '<|im_start|>system\nYou are a concise assistant.<|im_end|>\n<|im_start|>user\n');
  assert.ok([0, shared].includes(turns[1].cached), `cached ${turns[1].cached}, shared ${shared}`);
});
