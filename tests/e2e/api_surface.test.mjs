// The small parts of the API surface agents and SDKs reach for: several model names and the `*`
// wildcard, the models routes in OpenAI's and Anthropic's shapes, the ids' prefixes, reasoning
// tokens in usage, logprobs that add up to the content, a stored response's input items, CORS
// for browser clients and the routes without the /v1 prefix.
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAI, Anthropic, makeModel, startServer } from './harness.mjs';

const user = (content) => [{ role: 'user', content }];

describe('model names', () => {
  let server;
  before(async () => {
    server = await startServer(makeModel('qwen3'),
                               ['--served-model-name', 'big, small', '--served-model-name', 'tiny']);
  });
  after(async () => { await server?.stop(); });

  test('OpenAI clients list and retrieve every name', async () => {
    const client = server.client();
    const list = [];
    for await (const m of client.models.list()) list.push(m);
    assert.deepEqual(list.map((m) => m.id), ['big', 'small', 'tiny']);
    for (const m of list) {
      assert.equal(m.object, 'model');
      assert.equal(typeof m.created, 'number');
      assert.ok(m.created > 1.7e9, `created ${m.created} is the server's start`);
    }
    const small = await client.models.retrieve('small');
    assert.deepEqual(small, list[1]);
    await assert.rejects(client.models.retrieve('gpt-4o'), (e) =>
      e.status === 404 && e.code === 'model_not_found' && /'gpt-4o'/.test(e.message) &&
      /'big', 'small', 'tiny'/.test(e.message));
  });

  test('Anthropic clients get Anthropic\'s list and model objects', async () => {
    const client = server.anthropic();
    const page = await client.models.list();
    assert.deepEqual(page.data.map((m) => m.id), ['big', 'small', 'tiny']);
    for (const m of page.data) {
      assert.equal(m.type, 'model');
      assert.equal(m.display_name, m.id);
      assert.match(m.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    const raw = await server.json('/v1/models', { headers: { 'anthropic-version': '2023-06-01' } });
    assert.equal(raw.body.has_more, false);
    assert.equal(raw.body.first_id, 'big');
    assert.equal(raw.body.last_id, 'tiny');
    const tiny = await client.models.retrieve('tiny');
    assert.deepEqual({ ...tiny }, { ...page.data[2] });
    await assert.rejects(client.models.retrieve('claude-opus-4'), (e) =>
      e.status === 404 && e.error?.error?.type === 'not_found_error' &&
      /claude-opus-4/.test(e.error.error.message));
  });

  test('a response reports the name its request used; an empty name is the primary', async () => {
    const client = server.client();
    const body = { messages: user('Hi'), max_tokens: 3, temperature: 0 };
    assert.equal((await client.chat.completions.create({ ...body, model: 'small' })).model, 'small');
    assert.equal((await client.chat.completions.create({ ...body, model: '' })).model, 'big');
    assert.equal((await client.completions.create({ model: 'tiny', prompt: 'a', max_tokens: 2 })).model,
                 'tiny');
    const m = await server.anthropic().messages.create({ model: 'tiny', max_tokens: 3,
                                                         messages: user('Hi') });
    assert.equal(m.model, 'tiny');
    const r = await client.responses.create({ model: 'small', input: 'Hi', max_output_tokens: 3 });
    assert.equal(r.model, 'small');
    await assert.rejects(client.chat.completions.create({ ...body, model: 'gpt-4o' }),
                         (e) => e.status === 404 && e.code === 'model_not_found' && e.param === 'model');
  });

  test('RECUR_SERVED_MODEL_NAME takes the same list; * answers to any name', async () => {
    const any = await startServer(makeModel('qwen3'), [], { RECUR_SERVED_MODEL_NAME: 'main,*' });
    try {
      const client = any.client();
      const list = [];
      for await (const m of client.models.list()) list.push(m.id);
      assert.deepEqual(list, ['main'], 'the wildcard is not listed');
      const haiku = 'claude-3-5-haiku-20241022';
      assert.equal((await client.models.retrieve(haiku)).id, haiku);
      assert.equal((await any.anthropic().models.retrieve(haiku)).id, haiku);
      const m = await any.anthropic().messages.create({ model: haiku, max_tokens: 3,
                                                        messages: user('Hi') });
      assert.equal(m.model, haiku, 'Claude Code\'s small-model requests are answered');
    } finally {
      await any.stop();
    }
  });
});

describe('ids, usage and logprobs', () => {
  let server;
  before(async () => { server = await startServer(makeModel('qwen3')); });
  after(async () => { await server?.stop(); });

  test('ids carry each API\'s prefixes and are unique', async () => {
    const client = server.client();
    const ids = new Set();
    for (let i = 0; i < 2; i++) {
      const c = await client.chat.completions.create({ model: '', messages: user('Hi'), max_tokens: 2 });
      assert.match(c.id, /^chatcmpl-[0-9a-f]{32}$/);
      const t = await client.completions.create({ model: '', prompt: 'a', max_tokens: 2 });
      assert.match(t.id, /^cmpl-[0-9a-f]{32}$/);
      const m = await server.anthropic().messages.create({ model: '', max_tokens: 2, messages: user('Hi') });
      assert.match(m.id, /^msg_[0-9a-f]{32}$/);
      const r = await client.responses.create({ model: '', input: 'Hi', max_output_tokens: 4 });
      assert.match(r.id, /^resp_[0-9a-f]{32}$/);
      const token = r.id.slice('resp_'.length);
      for (const item of r.output) {
        const prefix = { reasoning: 'rs_', message: 'msg_', function_call: 'fc_' }[item.type];
        assert.ok(item.id.startsWith(prefix + token), `${item.type} item ${item.id}`);
      }
      for (const id of [c.id, t.id, m.id, r.id]) ids.add(id.replace(/^[a-z]+[-_]/, ''));
    }
    assert.equal(ids.size, 8, 'no two requests share an id');
  });

  // The content tokens' texts are the content, and their bytes its bytes, except where the
  // decoder made U+FFFD of invalid UTF-8: there the bytes are the raw ones it replaced (issue 47:
  // Gemma's stray byte-fallback tokens were U+FFFD's bytes). The rest of the generated tokens are
  // the reasoning block's, the newlines the splitter drops after it and an end token.
  function checkLogprobs(choice, usage, label) {
    const entries = choice.logprobs.content;
    assert.equal(entries.map((e) => e.token).join(''), choice.message.content, `${label}: tokens`);
    for (const e of entries) {
      if (!e.token.includes('\ufffd')) {
        assert.deepEqual(e.bytes, [...Buffer.from(e.token)], `${label}: bytes of ${e.token}`);
      } else {
        assert.ok(!Buffer.from(e.bytes).includes(Buffer.from('\ufffd')), `${label}: raw bytes`);
      }
    }
    const reasoning = usage.completion_tokens_details.reasoning_tokens;
    assert.ok(reasoning + entries.length <= usage.completion_tokens, label);
    if (choice.message.reasoning_content === undefined) {
      assert.equal(reasoning, 0, label);
    } else if (choice.message.content === '' && choice.finish_reason === 'length') {
      assert.equal(reasoning, usage.completion_tokens, `${label}: all of it in the block`);
    }
    return entries;
  }

  // qwen3's tiny model writes newlines (all dropped before the content), qwen3_5's opens its
  // reasoning block in the prompt, llama's has no reasoning block at all, gemma3's draws stray
  // byte-fallback tokens.
  for (const [family, thinking] of [['qwen3', true], ['qwen3', false], ['qwen3_5', true],
                                    ['qwen3_5', false], ['llama', false], ['gemma3', false]]) {
    test(`${family}${thinking ? ' (thinking)' : ''}: logprobs add up to the content`, async () => {
      const s = family === 'qwen3' ? server : await startServer(makeModel(family));
      try {
        const client = s.client();
        // gemma3's tiny model draws byte tokens only when sampled: seeded, so streamed and whole
        // agree.
        const sampling = family === 'gemma3' ? { temperature: 1.5, seed: 2 } : { temperature: 0 };
        let replaced = 0;  // entries whose text has a U+FFFD the decoder made
        for (const prompt of ['Hello', 'Tell me a story.', 'What is 2+2?']) {
          const body = { model: '', messages: user(prompt), max_tokens: 24, ...sampling,
                         logprobs: true, top_logprobs: 2,
                         chat_template_kwargs: { enable_thinking: thinking } };
          const whole = await client.chat.completions.create(body);
          const choice = whole.choices[0];
          const entries = checkLogprobs(choice, whole.usage, `${family} '${prompt}'`);
          replaced += entries.filter((e) => e.token.includes('\ufffd')).length;
          if (family === 'llama' && choice.finish_reason === 'length') {
            assert.equal(entries.length, whole.usage.completion_tokens, 'every token is content');
          }
          // Streamed, the chunks' entries are the same.
          const stream = await client.chat.completions.create(
            { ...body, stream: true, stream_options: { include_usage: true } });
          let streamed = [], content = '', usage;
          for await (const chunk of stream) {
            if (chunk.usage) usage = chunk.usage;
            for (const c of chunk.choices) {
              content += c.delta.content ?? '';
              streamed.push(...(c.logprobs?.content ?? []));
            }
          }
          assert.equal(content, choice.message.content);
          assert.deepEqual(streamed, entries);
          assert.deepEqual(usage.completion_tokens_details, whole.usage.completion_tokens_details);
        }
        if (family === 'gemma3') assert.ok(replaced > 0, 'stray byte tokens were drawn');
      } finally {
        if (s !== server) await s.stop();
      }
    });
  }

  test('Responses usage counts the reasoning tokens', async () => {
    // qwen3_5's template opens the reasoning block in the prompt: a tiny model's whole answer is
    // reasoning.
    const s = await startServer(makeModel('qwen3_5'));
    after(() => s.stop());
    const client = s.client();
    for (const effort of ['low', 'none']) {
      const r = await client.responses.create({ model: '', input: 'Think.', max_output_tokens: 16,
                                                reasoning: { effort } });
      const n = r.usage.output_tokens_details.reasoning_tokens;
      assert.equal(typeof n, 'number');
      const reasoning = r.output.find((i) => i.type === 'reasoning');
      if (effort === 'none' || !reasoning) {
        assert.equal(n, 0, `effort ${effort}`);
      } else {
        assert.ok(n > 0 && n <= r.usage.output_tokens, `${n} of ${r.usage.output_tokens}`);
        if (r.status === 'incomplete' && !r.output.some((i) => i.type === 'message')) {
          assert.equal(n, r.usage.output_tokens);
        }
      }
    }
  });
});

describe('stored responses\' input items', () => {
  let server;
  before(async () => { server = await startServer(makeModel('qwen3')); });
  after(async () => { await server?.stop(); });

  test('inputItems.list pages the input as sent, newest first by default', async () => {
    const client = server.client();
    const input = [
      { role: 'user', content: 'first' },
      { type: 'message', role: 'assistant', content: 'second' },
      { role: 'user', content: [{ type: 'input_text', text: 'third' }] },
    ];
    const r = await client.responses.create({ model: '', input, max_output_tokens: 2 });
    const all = [];
    for await (const item of client.responses.inputItems.list(r.id)) all.push(item);
    assert.deepEqual(all.map((i) => i.content), ['third', 'second', 'first'].map((t, k) =>
      k === 0 ? [{ type: 'input_text', text: t }] : t));
    for (const item of all) assert.match(item.id, /^msg_/);
    const asc = await client.responses.inputItems.list(r.id, { order: 'asc', limit: 2 });
    assert.deepEqual(asc.data.map((i) => i.role), ['user', 'assistant']);
    assert.equal(asc.has_more, true);
    const rest = await client.responses.inputItems.list(r.id, { order: 'asc', limit: 2,
                                                                 after: asc.data[1].id });
    assert.deepEqual(rest.data.map((i) => i.id), [all[0].id]);
    assert.equal(rest.has_more, false);

    const s = await client.responses.create({ model: '', input: 'just text', max_output_tokens: 2 });
    const one = await client.responses.inputItems.list(s.id);
    assert.deepEqual(one.data.map(({ id, ...rest }) => rest),
                     [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'just text' }] }]);
    assert.equal(one.first_id, one.last_id);

    await assert.rejects(client.responses.inputItems.list('resp_nope'),
                         (e) => e.status === 404 && /resp_nope/.test(e.message));
    const bad = await server.json(`/v1/responses/${r.id}/input_items?limit=500`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'limit');
    const unstored = await client.responses.create({ model: '', input: 'x', store: false,
                                                     max_output_tokens: 2 });
    assert.equal((await server.json(`/v1/responses/${unstored.id}/input_items`)).status, 404);
  });
});

describe('CORS and routes without /v1', () => {
  let server;
  before(async () => { server = await startServer(makeModel('qwen3'), ['--api-key', 'sk-key']); });
  after(async () => { await server?.stop(); });

  const preflight = (origin, path = '/v1/chat/completions') => fetch(`${server.base}${path}`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'POST',
               'Access-Control-Request-Headers': 'authorization,content-type,x-stainless-os' },
  });

  test('a loopback page\'s preflight is allowed on every API route; another origin\'s is a 403', async () => {
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1/models',
                        '/v1/models/x', '/v1/responses/resp_1/input_items', '/chat/completions']) {
      const r = await preflight('http://localhost:5173', path);
      assert.equal(r.status, 204, path);
      assert.equal(r.headers.get('access-control-allow-origin'), 'http://localhost:5173');
      assert.equal(r.headers.get('access-control-allow-headers'),
                   'authorization,content-type,x-stainless-os');
      assert.match(r.headers.get('access-control-allow-methods'), /POST/);
      assert.ok(Number(r.headers.get('access-control-max-age')) > 0);
      assert.match(r.headers.get('vary'), /Origin/);
    }
    const evil = await preflight('https://evil.example');
    assert.equal(evil.status, 403);
    assert.equal(evil.headers.get('access-control-allow-origin'), null);
    assert.match((await evil.json()).error.message, /--cors-origins/);
  });

  test('responses to an allowed origin carry Access-Control-Allow-Origin, streams too', async () => {
    const origin = 'http://127.0.0.1:3000';
    const headers = { Origin: origin, Authorization: 'Bearer sk-key', 'Content-Type': 'application/json' };
    const body = JSON.stringify({ model: '', messages: user('Hi'), max_tokens: 2, stream: true });
    const r = await fetch(`${server.base}/v1/chat/completions`, { method: 'POST', headers, body });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), origin);
    assert.match(await r.text(), /\[DONE\]/);
    const unauthorized = await fetch(`${server.base}/v1/models`, { headers: { Origin: origin } });
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.headers.get('access-control-allow-origin'), origin);
    const other = await fetch(`${server.base}/v1/models`,
                              { headers: { Origin: 'https://evil.example', Authorization: 'Bearer sk-key' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  test('--cors-origins replaces the loopback default', async () => {
    const s = await startServer(makeModel('qwen3'), ['--cors-origins', 'https://app.example']);
    try {
      const ok = await fetch(`${s.base}/v1/models`, { method: 'OPTIONS',
        headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET' } });
      assert.equal(ok.status, 204);
      const local = await fetch(`${s.base}/v1/models`, { method: 'OPTIONS',
        headers: { Origin: 'http://localhost:3000', 'Access-Control-Request-Method': 'GET' } });
      assert.equal(local.status, 403);
    } finally {
      await s.stop();
    }
  });

  test('the SDKs work with a base URL without /v1', async () => {
    const openai = new OpenAI({ baseURL: server.base, apiKey: 'sk-key', maxRetries: 0 });
    const c = await openai.chat.completions.create({ model: '', messages: user('Hi'), max_tokens: 2 });
    assert.equal(c.object, 'chat.completion');
    assert.equal((await openai.completions.create({ model: '', prompt: 'a', max_tokens: 2 })).object,
                 'text_completion');
    const list = [];
    for await (const m of openai.models.list()) list.push(m.id);
    assert.equal(list.length, 1);
    assert.equal((await openai.models.retrieve(list[0])).id, list[0]);
    const r = await openai.responses.create({ model: '', input: 'Hi', max_output_tokens: 2 });
    assert.equal((await openai.responses.retrieve(r.id)).id, r.id);
    assert.equal((await openai.responses.inputItems.list(r.id)).data.length, 1);
    await openai.responses.delete(r.id);
    await assert.rejects(openai.responses.retrieve(r.id), (e) => e.status === 404);
    // Anthropic's SDK appends /v1 itself; a client configured with .../v1 as its base would not.
    const post = (path, body) => fetch(`${server.base}${path}`, {
      method: 'POST', body: JSON.stringify(body),
      headers: { 'x-api-key': 'sk-key', 'anthropic-version': '2023-06-01',
                 'content-type': 'application/json' } });
    const m = await post('/messages', { model: '', max_tokens: 2, messages: user('Hi') });
    assert.equal(m.status, 200);
    assert.equal((await m.json()).type, 'message');
    const n = await post('/messages/count_tokens', { model: '', messages: user('Hi') });
    assert.ok((await n.json()).input_tokens > 0);
    const e = await post('/messages', { model: '', max_tokens: 2, messages: 'nope' });
    assert.equal(e.status, 400);
    assert.equal((await e.json()).type, 'error', 'Anthropic\'s error shape without /v1 too');
  });
});
