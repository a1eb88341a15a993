// Drives the real coding agents (tests/agents: Claude Code, Codex CLI, Qwen Code, OpenCode)
// non-interactively against `recur serve`, through a recording proxy on loopback that keeps every
// request body and the usage of every response, and judges the protocol and the cache from them
// (the generated checkpoints have random weights: the text is gibberish by design).
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { tempDir } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, '../agents/node_modules/.bin');

// What a streamed or whole response said about its prompt: tokens and tokens from the cache.
function usageOf(path, text) {
  let prompt = null;
  let cached = null;
  const take = (o) => {
    if (!o || typeof o !== 'object') return;
    const u = o.usage ?? o.response?.usage ?? o.message?.usage;
    if (!u) return;
    if (u.prompt_tokens !== undefined) {  // chat completions
      prompt = u.prompt_tokens;
      cached = u.prompt_tokens_details?.cached_tokens ?? 0;
    } else if (u.input_tokens_details !== undefined) {  // responses
      prompt = u.input_tokens;
      cached = u.input_tokens_details.cached_tokens ?? 0;
    } else if (u.cache_read_input_tokens !== undefined) {  // messages: the input fields add up
      prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
      cached = u.cache_read_input_tokens;
    }
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('data: ') && line !== 'data: [DONE]') {
      try { take(JSON.parse(line.slice(6))); } catch { /* not JSON */ }
    }
  }
  if (prompt === null) {
    try { take(JSON.parse(text)); } catch { /* not JSON */ }
  }
  return prompt === null ? null : { prompt, cached };
}

// A proxy in front of the server that records each exchange.
export async function recordingProxy(target) {
  const exchanges = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const headers = { ...req.headers };
      delete headers['accept-encoding'];  // plain text, to read the usage
      const up = http.request({ host: '127.0.0.1', port: target.port, method: req.method,
                                path: req.url, headers }, (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        const out = [];
        ur.on('data', (c) => { out.push(c); res.write(c); });
        ur.on('end', () => {
          res.end();
          const text = Buffer.concat(out).toString();
          let json = null;
          try { json = JSON.parse(body); } catch { /* GET */ }
          exchanges.push({ method: req.method, path: req.url, status: ur.statusCode, body: json,
                           usage: usageOf(req.url, text), error: ur.statusCode >= 400 ? text : null });
        });
      });
      up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
      up.end(body);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  return { base: `http://127.0.0.1:${port}`, exchanges,
           close: () => new Promise((r) => server.close(r)) };
}

// Each agent: its command line for a first turn or a follow-up in the same session, and the
// environment and config files that point it at the server with updates, telemetry and other
// network features off.
const AGENTS = {
  claude: {
    setup: () => ({}),
    env: (ctx) => ({
      ANTHROPIC_BASE_URL: ctx.base, ANTHROPIC_API_KEY: 'sk-recur-test', ANTHROPIC_MODEL: ctx.model,
      ANTHROPIC_SMALL_FAST_MODEL: ctx.model, ANTHROPIC_DEFAULT_HAIKU_MODEL: ctx.model,
      DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_BUG_COMMAND: '1' }),
    args: (ctx, prompt, resume) => ['-p', prompt, '--model', ctx.model, '--max-turns', '2',
                                    ...(resume ? ['--continue'] : [])],
  },
  codex: {
    setup: (ctx) => {
      const codexHome = join(ctx.home, '.codex');
      mkdirSync(codexHome, { recursive: true });
      writeFileSync(join(codexHome, 'config.toml'), [
        `model = "${ctx.model}"`, 'model_provider = "recur"', 'check_for_update_on_startup = false',
        '[analytics]', 'enabled = false', '[model_providers.recur]', 'name = "recur"',
        `base_url = "${ctx.base}/v1"`, 'wire_api = "responses"', 'env_key = "RECUR_API_KEY"', '',
      ].join('\n'));
      return { CODEX_HOME: codexHome };
    },
    env: () => ({ RECUR_API_KEY: 'sk-recur-test' }),
    args: (ctx, prompt, resume) => ['exec', '--skip-git-repo-check',
                                    ...(resume ? ['resume', '--last'] : []), prompt],
  },
  qwen: {
    setup: (ctx) => {
      mkdirSync(join(ctx.home, '.qwen'), { recursive: true });
      writeFileSync(join(ctx.home, '.qwen', 'settings.json'), JSON.stringify({
        telemetry: { enabled: false }, privacy: { usageStatisticsEnabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true } }));
      return {};
    },
    env: (ctx) => ({ OPENAI_API_KEY: 'sk-recur-test', OPENAI_BASE_URL: `${ctx.base}/v1`,
                     OPENAI_MODEL: ctx.model }),
    args: (ctx, prompt, resume) => ['-p', prompt, '--auth-type', 'openai',
                                    ...(resume ? ['--continue'] : [])],
  },
  opencode: {
    setup: (ctx) => {
      writeFileSync(join(ctx.project, 'opencode.json'), JSON.stringify({
        $schema: 'https://opencode.ai/config.json', autoupdate: false, share: 'disabled',
        provider: { recur: { npm: '@ai-sdk/openai-compatible', name: 'recur',
                             options: { baseURL: `${ctx.base}/v1`, apiKey: 'sk-recur-test' },
                             models: { [ctx.model]: { name: ctx.model } } } } }));
      return {};
    },
    env: () => ({ OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_SHARE: '1',
                  OPENCODE_DISABLE_DEFAULT_PLUGINS: '1', OPENCODE_DISABLE_LSP_DOWNLOAD: '1' }),
    args: (ctx, prompt, resume) => ['run', '-m', `recur/${ctx.model}`,
                                    ...(resume ? ['--continue'] : []), prompt],
  },
};

// One agent pointed at `base`: run(prompt, resume) runs one turn and resolves with its exit.
// A second session in the same project passes the first one's `project`.
export function agentSession(name, { base, model, home, project = tempDir(`${name}-project`) }) {
  const agent = AGENTS[name];
  const ctx = { base, model, home, project };
  const extra = agent.setup(ctx);
  const run = async (prompt, resume) => {
    const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', TERM: 'dumb', CI: '1',
                  NO_COLOR: '1', ...extra, ...agent.env(ctx) };
    const proc = spawn(join(BIN, name), agent.args(ctx, prompt, resume),
                       { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (c) => { out += c; });
    proc.stderr.on('data', (c) => { out += c; });
    const code = await new Promise((resolve) => {
      const timer = setTimeout(() => proc.kill('SIGKILL'), 180000);
      proc.on('exit', (c, signal) => { clearTimeout(timer); resolve(c ?? signal); });
    });
    return { code, out };
  };
  run.project = project;
  return run;
}

// The conversation part of a request, without the marks that move as a conversation grows.
const strip = (v) => JSON.parse(JSON.stringify(v ?? null, (k, x) => (k === 'cache_control' ? undefined : x)));
function conversation(body) {
  if (Array.isArray(body.messages)) return strip(body.messages);
  return strip((body.input ?? []).map(({ id, ...item }) => item));
}
// What decides the cache bucket besides the conversation: tools, and the system prompt where the
// API keeps it apart.
const bucketOf = (body) => JSON.stringify(strip([body.tools ?? [], body.system ?? null,
                                                 body.instructions ?? null]));
const isPrefix = (a, b) => a.length < b.length &&
  a.every((m, i) => JSON.stringify(m) === JSON.stringify(b[i]));

// Judges the recorded chat requests of one agent's turns.
// - every exchange succeeded (no 4xx or 5xx);
// - a request that extends the one before it of the same bucket (its conversation starts with
//   all of the earlier one's) computed at most the tokens past the earlier prompt (plus the few of
//   the earlier generation prompt it replaces): everything before came from the cache;
// - every later request with tools of a bucket seen before reused at least half its prompt (the
//   agent's tools and system prompt, even where the agent rewrote earlier messages).
// Returns the number of requests and of those extending the one before.
export function judge(exchanges, label) {
  for (const e of exchanges) {
    assert.ok(e.status < 400, `${label}: ${e.method} ${e.path} answered ${e.status}: ${e.error}`);
  }
  const chats = exchanges.filter((e) => e.method === 'POST' && e.body && e.usage &&
                                        /\/(chat\/completions|responses|messages)(\?|$)/.test(e.path));
  let extending = 0;
  chats.forEach((e, k) => {
    const earlier = chats.slice(0, k).filter((p) => bucketOf(p.body) === bucketOf(e.body));
    if (earlier.length === 0) return;
    const computed = e.usage.prompt - e.usage.cached;
    const what = `${label}: request ${k + 1} (${e.path}) ${JSON.stringify(e.usage)}`;
    if ((e.body.tools ?? []).length > 0) {
      // An agent's own turns: tools and instructions are most of the prompt. (Side requests
      // without tools, such as OpenCode's title, share only a short system prompt.)
      assert.ok(e.usage.cached * 2 >= e.usage.prompt, `${what}: reused less than half its prompt`);
    }
    // The request just before it of the bucket, when this one extends it. (An agent that edits
    // its newest message, as Claude Code does to retry an empty reply, starts a new chain: on a
    // hybrid model the ancestors of the edited request were superseded, docs/prompt-cache.md.)
    const conv = conversation(e.body);
    const previous = earlier.at(-1);
    const base = isPrefix(conversation(previous.body), conv) ? previous : undefined;
    if (base) {
      extending++;
      assert.ok(computed <= e.usage.prompt - base.usage.prompt + 16,
                `${what}: computed ${computed} tokens; it extends a ${base.usage.prompt}-token prompt`);
    }
  });
  return { requests: chats.length, extending };
}

// How strongly each family's generated checkpoint ends its turns (modelgen --eos-bias): measured
// so that replies are mostly a few tens of tokens and seldom empty.
const EOS_BIAS = { qwen3: '5', qwen3_5: '2', llama: '1' };

// The suite each agent's test file runs: on a checkpoint of each family, three turns of one
// session (the first, then two follow-ups that continue it), then the first turn of a second
// session, all judged from the recorded exchanges.
export function agentSuite(name, { families = ['qwen3', 'qwen3_5', 'llama'],
                                   makeModel, startServer, describe, test }) {
  describe(`${name} against recur serve`, () => {
    for (const family of families) {
      test(`${family}: three turns of a session and a second session, every turn from the cache`,
           async (t) => {
        // Random weights that end their turns within some tens of tokens (a reply cut at
        // max_tokens is an error to Claude Code, an empty one to Qwen Code, and a plain random
        // model can run on for thousands), served without the thinking block, whose text agents
        // do not count as a reply.
        const server = await startServer(makeModel(family, ['--eos-bias', EOS_BIAS[family]]),
                                         ['--chat-template-kwargs', '{"enable_thinking": false}']);
        const proxy = await recordingProxy(server);
        try {
          const home = tempDir(`${name}-home`);
          const ctx = { base: proxy.base, model: family, home };
          const run = agentSession(name, ctx);
          const prompts = ['List the files in this folder.', 'What is two plus two?',
                           'Thanks, that is all.'];
          for (let t = 0; t < prompts.length; t++) {
            const r = await run(prompts[t], t > 0);
            assert.equal(r.code, 0, `${name} turn ${t + 1} exited ${r.code}:\n${r.out.slice(-3000)}`);
            await server.warmupsSettled();
          }
          const first = judge(proxy.exchanges, `${name} on ${family}`);
          assert.ok(first.requests >= prompts.length, JSON.stringify(first));
          // A new session in the same project, as a developer starts one the next morning.
          const r = await agentSession(name, { ...ctx, project: run.project })('Say hello.', false);
          assert.equal(r.code, 0, `${name} second session exited ${r.code}:\n${r.out.slice(-3000)}`);
          const all = judge(proxy.exchanges, `${name} on ${family}, second session`);
          assert.ok(all.requests > first.requests, 'the second session sent its request');
          t.diagnostic(`${name} on ${family}: ${first.requests} requests in the session, ` +
                       `${first.extending} extending the one before; ` +
                       proxy.exchanges.filter((e) => e.usage)
                         .map((e) => `${e.usage.cached}/${e.usage.prompt}`).join(' '));
        } finally {
          await proxy.close();
          await server.stop();
        }
      });
    }
  });
}
