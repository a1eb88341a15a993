// The API surface through the official SDK and plain HTTP: streaming, usage, errors, auth,
// limits, disconnects, isolation between tenants, steady-state cache memory.
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeModel, startServer, tempDir, RECUR } from './harness.mjs';
import { converse } from './conversation.mjs';

const chatBody = (extra = {}) => ({
  model: 'qwen3_5',
  messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say something.' }],
  max_tokens: 12, temperature: 0, ...extra,
});

describe('chat API', () => {
  let server;
  before(async () => { server = await startServer(makeModel('qwen3_5'), ['--parallel', '2']); });
  after(async () => { await server?.stop(); });

  test('streaming deltas assemble to the non-streaming answer', async () => {
    const client = server.client();
    const whole = await client.chat.completions.create(chatBody({ logprobs: true }));
    const stream = await client.chat.completions.create(
      chatBody({ stream: true, stream_options: { include_usage: true }, logprobs: true }));
    let content = '', reasoning = '', finish = null, usage = null, roles = 0, logprobs = [];
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta.role) roles++;
        content += c.delta.content ?? '';
        reasoning += c.delta.reasoning_content ?? '';
        if (c.logprobs?.content) logprobs.push(...c.logprobs.content);
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    const msg = whole.choices[0].message;
    assert.equal(roles, 1);
    assert.equal(content, msg.content);
    assert.equal(reasoning, msg.reasoning_content ?? '');
    assert.equal(finish, whole.choices[0].finish_reason);
    // The second request may reuse the first one's prompt: only cached_tokens may differ.
    assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
    assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
    assert.deepEqual(logprobs, whole.choices[0].logprobs.content);
    // Logprobs are the content's tokens; the rest were the reasoning block's.
    assert.equal(logprobs.map((t) => t.token).join(''), msg.content);
    assert.equal(logprobs.length,
                 whole.usage.completion_tokens - whole.usage.completion_tokens_details.reasoning_tokens);
  });

  test('stop strings end the text before them', async () => {
    const client = server.client();
    const base = await client.chat.completions.create(chatBody({ max_tokens: 24 }));
    const text = (base.choices[0].message.reasoning_content ?? '') + base.choices[0].message.content;
    const cut = text.slice(3, 5);
    if (cut.trim().length === 0) return;  // nothing usable to stop on in this output
    const stopped = await client.chat.completions.create(chatBody({ max_tokens: 24, stop: [cut] }));
    const got = (stopped.choices[0].message.reasoning_content ?? '') + stopped.choices[0].message.content;
    assert.ok(!got.includes(cut), `'${got}' contains the stop '${cut}'`);
    assert.equal(stopped.choices[0].finish_reason, 'stop');
  });

  test('text completions, also streamed', async () => {
    const client = server.client();
    // ignore_eos: exactly 8 tokens whatever this CPU's greedy tokens are.
    const r = await client.completions.create({ model: 'qwen3_5', prompt: 'Once upon a time',
                                                max_tokens: 8, temperature: 0, ignore_eos: true });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.usage.completion_tokens, 8);
    const s = await client.completions.create({ model: 'qwen3_5', prompt: 'Once upon a time',
                                                max_tokens: 8, temperature: 0, ignore_eos: true,
                                                stream: true });
    let text = '', usage = null, objects = new Set();
    for await (const chunk of s) {
      text += chunk.choices[0]?.text ?? '';
      objects.add(chunk.object);
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, r.choices[0].text);
    assert.deepEqual([...objects], ['text_completion']);
    assert.equal(usage, null, 'no usage chunk unless asked');
    const withUsage = await client.completions.create({ model: 'qwen3_5', prompt: 'Once upon a time',
      max_tokens: 8, temperature: 0, ignore_eos: true, stream: true,
      stream_options: { include_usage: true } });
    for await (const chunk of withUsage) {
      assert.equal(chunk.object, 'text_completion');
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(usage.completion_tokens, 8);
  });

  test('invalid requests are 400s naming the field', async () => {
    const client = server.client();
    await assert.rejects(client.chat.completions.create(chatBody({ temperature: 5 })),
                         (e) => e.status === 400 && e.param === 'temperature');
    await assert.rejects(client.chat.completions.create({ model: 'qwen3_5', messages: [] }),
                         (e) => e.status === 400 && e.param === 'messages');
    await assert.rejects(client.chat.completions.create(chatBody({ max_tokens: (1 << 20) + 1 })),
                         (e) => e.status === 400 && e.param === 'max_tokens');
    await assert.rejects(client.chat.completions.create(chatBody({ model: 'gpt-4o' })),
                         (e) => e.status === 404 && e.code === 'model_not_found');
    const raw = await server.json('/v1/chat/completions', { method: 'POST', body: '{"messages": [' });
    assert.equal(raw.status, 400);
    assert.equal(raw.body.error.type, 'invalid_request_error');
    const route = await server.json('/v1/unknown');
    assert.equal(route.status, 404);
  });

  test('a client that disconnects mid-stream frees its sequence', async () => {
    const controller = new AbortController();
    const client = server.client();
    const stream = await client.chat.completions.create(
      chatBody({ max_tokens: 4000, stream: true, ignore_eos: true }), { signal: controller.signal });
    let chunks = 0;
    try {
      // Breaks out as well as aborting: see anthropic.test.mjs.
      for await (const _ of stream) {
        if (++chunks === 3) {
          controller.abort();
          break;
        }
      }
    } catch { /* the abort */ }
    for (let i = 0; i < 200; i++) {
      const text = await (await fetch(`${server.base}/metrics`)).text();
      const active = Number(text.match(/^recur_active_sequences (\S+)$/m)?.[1]);
      const cancelled = Number(text.match(/^recur_cancelled_requests_total\{reason="client_disconnect"\} (\S+)$/m)?.[1] ?? 0);
      if (active === 0 && cancelled >= 1) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.fail('the sequence was not freed');
  });

  test('models, health and cache routes', async () => {
    const models = await server.client().models.list();
    assert.deepEqual(models.data.map((m) => m.id), ['qwen3_5']);
    assert.equal((await server.json('/health')).status, 200);
    const stats = await server.stats();
    assert.equal(stats.enabled, true);
    assert.ok(stats.snapshot.inserts > 0);
    const reset = await server.json('/v1/cache/reset', { method: 'POST' });
    assert.ok(reset.body.freed_entries > 0);
    assert.equal((await server.stats()).snapshot.entries, 0);
  });
});

describe('auth and limits', () => {
  let server;
  before(async () => {
    server = await startServer(makeModel('qwen3_5'), ['--api-key', 'sk-right', '--body-limit-bytes', '4KiB']);
  });
  after(async () => { await server?.stop(); });

  test('every route but /health needs the key', async () => {
    assert.equal((await server.json('/health')).status, 200);
    await assert.rejects(server.client({ apiKey: 'sk-wrong' }).models.list(), (e) => e.status === 401);
    assert.equal((await server.json('/metrics').catch(() => ({ status: 401 }))).status, 401);
    const ok = await server.client({ apiKey: 'sk-right' }).chat.completions.create(chatBody());
    assert.equal(ok.object, 'chat.completion');
  });

  test('a body over the limit is a 413 naming the flag', async () => {
    const r = await fetch(`${server.base}/v1/chat/completions`, {
      method: 'POST', headers: { Authorization: 'Bearer sk-right' },
      body: JSON.stringify(chatBody({ messages: [{ role: 'user', content: 'x'.repeat(8000) }] })),
    });
    assert.equal(r.status, 413);
    assert.match((await r.json()).error.message, /--body-limit-bytes/);
  });
});

for (const family of ['qwen3_5', 'qwen3']) {
  describe(`tenant isolation: ${family}`, () => {
    let server;
    before(async () => { server = await startServer(makeModel(family)); });
    after(async () => { await server?.stop(); });

    test('a different cache_salt or API key never reuses another tenant\'s conversation', async () => {
      const system = 'A system prompt long enough to be worth caching for everyone involved here.';
      const a = await converse(server, family, { system, salt: 'tenant-a', turns: 2 });
      assert.ok(a[1].cached_tokens > 0, 'the owner reuses its own conversation');
      // Replay the owner's second turn exactly, as three tenants.
      const reply = { role: 'assistant', content: a[0].content ?? '' };
      if (a[0].reasoning !== null) reply.reasoning_content = a[0].reasoning;
      const messages = [{ role: 'system', content: system }, { role: 'user', content: a[0].user },
                        reply, { role: 'user', content: a[1].user }];
      const replay = async (salt, apiKey) => {
        const r = await server.client({ apiKey }).chat.completions.create(
          { model: family, messages, max_tokens: 4, temperature: 0, cache_salt: salt,
            chat_template_kwargs: { enable_thinking: true } });
        return r.usage.prompt_tokens_details.cached_tokens;
      };
      assert.equal(await replay('tenant-b', undefined), 0, 'another salt');
      assert.equal(await replay('tenant-a', 'sk-other-key'), 0, 'another API key');
      assert.ok(await replay('tenant-a', undefined) > 0, 'the owner again');
    });
  });
}

describe('ignore_eos (vLLM extension)', () => {
  // The id of a token the model writes, made an end-of-generation token of a copy of the
  // checkpoint (generation_config.json eos_token_id): without ignore_eos the answer stops there;
  // with it the same tokens go on to max_tokens. A token first written after the first step is
  // preferred (the stopped answer is then not empty); which one depends on this CPU's kernels.
  // Thinking is off so the tokens are content (logprobs cover only the content); newlines are
  // not candidates, as the template drops the ones that lead the content (and their logprobs).
  const PROMPTS = ['Tell me a story about a cat.', 'List three colors.', 'Say something.', 'Hello'];
  let server, stopAt;
  const body = (content, extra) => ({ model: 'qwen3_5', messages: [{ role: 'user', content }],
                                      max_tokens: 24, temperature: 0, logprobs: true,
                                      chat_template_kwargs: { enable_thinking: false }, ...extra });
  const idOf = (dir, text) => {
    const ids = execFileSync(RECUR, ['tokenize', '-m', dir], { input: text }).toString().trim();
    return /^\d+$/.test(ids) ? Number(ids) : null;  // the text is one token
  };
  before(async () => {
    const source = makeModel('qwen3_5');
    const plain = await startServer(source);
    const answers = [];
    for (const content of PROMPTS) {
      const r = await plain.client().chat.completions.create(body(content));
      answers.push({ content, tokens: r.choices[0].logprobs.content.map((t) => t.token) });
    }
    await plain.stop();
    for (const { content, tokens } of answers) {
      for (let i = 1; i < tokens.length && !stopAt; i++) {
        const id = tokens.indexOf(tokens[i]) === i && tokens[i].trim() !== ''
          ? idOf(source, tokens[i]) : null;
        if (id !== null) stopAt = { content, index: i, id, tokens };
      }
    }
    for (const { content, tokens } of answers) {
      const id = stopAt || tokens.length === 0 || tokens[0].trim() === '' ? null
        : idOf(source, tokens[0]);
      if (id !== null) stopAt = { content, index: 0, id, tokens };
    }
    assert.ok(stopAt, `no answer's token is one token alone: ${JSON.stringify(answers)}`);
    const dir = join(tempDir('eos'), 'qwen3_5');
    cpSync(source, dir, { recursive: true });
    const config = JSON.parse(readFileSync(join(dir, 'generation_config.json'), 'utf8'));
    config.eos_token_id = [config.eos_token_id, stopAt.id].flat();
    writeFileSync(join(dir, 'generation_config.json'), JSON.stringify(config, null, 2));
    server = await startServer(dir);
  });
  after(async () => { await server?.stop(); });

  test('without it the answer ends at the end-of-generation token; with it, at max_tokens', async () => {
    const client = server.client();
    const stopped = await client.chat.completions.create(body(stopAt.content));
    assert.equal(stopped.choices[0].finish_reason, 'stop');
    assert.deepEqual((stopped.choices[0].logprobs?.content ?? []).map((t) => t.token),
                     stopAt.tokens.slice(0, stopAt.index));
    for (const stream of [false, true]) {
      const req = body(stopAt.content,
                       { ignore_eos: true, stream, ...(stream && { stream_options: { include_usage: true } }) });
      let finish, usage, tokens = [];
      if (stream) {
        for await (const chunk of await client.chat.completions.create(req)) {
          if (chunk.usage) usage = chunk.usage;
          for (const c of chunk.choices) {
            tokens.push(...(c.logprobs?.content ?? []).map((t) => t.token));
            finish = c.finish_reason ?? finish;
          }
        }
      } else {
        const r = await client.chat.completions.create(req);
        [finish, usage] = [r.choices[0].finish_reason, r.usage];
        tokens = r.choices[0].logprobs.content.map((t) => t.token);
      }
      assert.equal(finish, 'length', `stream: ${stream}`);
      assert.equal(usage.completion_tokens, 24);
      assert.deepEqual(tokens, stopAt.tokens, `stream: ${stream}`);
    }
    const wrong = await server.json('/v1/chat/completions', {
      method: 'POST', body: JSON.stringify(body('Hi', { ignore_eos: 'yes' })) });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error.param, 'ignore_eos');
  });
});
