// What coding agents and the SDKs send beyond plain chat: a context as long as the model's, a
// max_tokens past it, hosted tools recur cannot run (left out and named, or refused on request),
// Codex's namespace tools, item_reference inputs, stateless Responses conversations that reuse the
// cache on a hybrid model, and Anthropic cache_control breakpoints that let a new session resume
// from the deepest prefix it shares with an earlier one.
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeModel, startServer, oracleTokenCount } from './harness.mjs';
import { USER_MESSAGES } from './conversation.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { Tokenizer } = createRequire(join(here, '../node/package.json'))('@anush008/tokenizers');

async function post(server, path, body, headers = {}) {
  const r = await fetch(`${server.base}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body) });
  return { status: r.status, body: await r.json(), headers: r.headers };
}

const weather = { type: 'function', name: 'get_weather', description: 'Current weather of a city.',
                  parameters: { type: 'object', properties: { city: { type: 'string' } },
                                required: ['city'] } };

describe('context', () => {
  let server, small;
  after(async () => { await server?.stop(); await small?.stop(); });

  test('the default context is the one the model was trained for', async () => {
    server = await startServer(makeModel('qwen3'));  // its config: max_position_embeddings 40960
    assert.match(server.log(), /context: 40960 tokens per sequence, as the model was trained/);
    // Longer than the old default of 8192 (max_tokens past the context: the next test).
    const r = await post(server, '/v1/chat/completions', {
      messages: [{ role: 'user', content: 'word '.repeat(4200) }], max_tokens: 4 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.usage.prompt_tokens > 8192, 'beyond the old 8192 default');
  });

  test('max_tokens past the context ends the turn there; a prompt past it is a 400 naming it',
       async () => {
    small = await startServer(makeModel('qwen3'), ['--ctx-size', '64']);
    const r = await post(small, '/v1/chat/completions', {
      messages: [{ role: 'user', content: 'Hi.' }], max_tokens: 32000, ignore_eos: true,
      temperature: 0 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.choices[0].finish_reason, 'length');
    assert.equal(r.body.usage.prompt_tokens + r.body.usage.completion_tokens, 64);
    const long = await post(small, '/v1/chat/completions', {
      messages: [{ role: 'user', content: 'word '.repeat(100) }], max_tokens: 4 });
    assert.equal(long.status, 400);
    assert.equal(long.body.error.code, 'context_length_exceeded');
    assert.match(long.body.error.message, /--ctx-size/);
  });
});

describe('--chat-template-kwargs', () => {
  let server, plain;
  after(async () => { await server?.stop(); await plain?.stop(); });

  test('every request gets the server\'s template variables unless it sets them', async () => {
    const dir = makeModel('qwen3_5');
    server = await startServer(dir, ['--chat-template-kwargs', '{"enable_thinking": false}']);
    plain = await startServer(dir);
    const body = (kwargs) => ({ messages: [{ role: 'user', content: 'Hello.' }], max_tokens: 2,
                                temperature: 0, ...(kwargs ? { chat_template_kwargs: kwargs } : {}) });
    const tokens = async (s, kwargs) =>
      (await post(s, '/v1/chat/completions', body(kwargs))).body.usage.prompt_tokens;
    const off = await tokens(plain, { enable_thinking: false });
    const on = await tokens(plain, { enable_thinking: true });
    assert.notEqual(off, on, 'the variable changes the prompt');
    assert.equal(await tokens(server), off, 'the default applies');
    assert.equal(await tokens(server, { enable_thinking: true }), on, 'the request wins');
    const m = await post(server, '/v1/messages/count_tokens',
                         { messages: [{ role: 'user', content: 'Hello.' }] });
    assert.equal(m.body.input_tokens, off - 0, JSON.stringify(m.body));
  });

  test('a value that is not a JSON object stops the server with a message naming the flag',
       async () => {
    await assert.rejects(startServer(makeModel('qwen3_5'), ['--chat-template-kwargs', '[1]']),
                         /--chat-template-kwargs must be a JSON object/);
  });
});

describe('tools recur cannot run', () => {
  const dir = makeModel('qwen3_5');
  let server, strict;
  before(async () => { server = await startServer(dir); });
  after(async () => { await server?.stop(); await strict?.stop(); });

  test('hosted tools are left out of the prompt and named in a header and the log', async () => {
    const base = { model: 'qwen3_5', input: 'Hello.', max_output_tokens: 2, store: false };
    const hosted = [{ type: 'web_search' }, { type: 'file_search', vector_store_ids: ['vs_1'] },
                    { type: 'mcp', server_label: 'github', server_url: 'https://example.invalid' },
                    weather, { type: 'code_interpreter', container: { type: 'auto' } }];
    const withHosted = await post(server, '/v1/responses', { ...base, tools: hosted });
    assert.equal(withHosted.status, 200, JSON.stringify(withHosted.body));
    assert.equal(withHosted.headers.get('x-recur-dropped-tools'),
                 'web_search, file_search, mcp:github, code_interpreter');
    const plain = await post(server, '/v1/responses', { ...base, tools: [weather] });
    assert.equal(plain.headers.get('x-recur-dropped-tools'), null);
    assert.equal(withHosted.body.usage.input_tokens, plain.body.usage.input_tokens,
                 'the prompt is the one with the function tool alone');
    assert.deepEqual(withHosted.body.tools, hosted, 'the response echoes the tools as sent');
    assert.match(server.log(), /tools left out of the prompt .*: web_search, file_search, mcp:github/);

    const chat = await post(server, '/v1/chat/completions', {
      messages: [{ role: 'user', content: 'Hello.' }], max_tokens: 2,
      tools: [{ type: 'custom', custom: { name: 'apply_patch' } },
              { type: 'function', function: { name: 'get_weather', parameters: weather.parameters } }] });
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
    assert.equal(chat.headers.get('x-recur-dropped-tools'), 'custom');

    const messages = await post(server, '/v1/messages', {
      max_tokens: 2, messages: [{ role: 'user', content: 'Hello.' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
              { name: 'get_weather', input_schema: weather.parameters }] });
    assert.equal(messages.status, 200, JSON.stringify(messages.body));
    assert.equal(messages.headers.get('x-recur-dropped-tools'), 'web_search_20250305');
  });

  test('a namespace tool is offered as flat functions; its calls echo back by namespace',
       async () => {
    const fn = (name) => ({ type: 'function', name, description: 'A file tool.',
                            parameters: { type: 'object', properties: {} } });
    const base = { model: 'qwen3_5', max_output_tokens: 2, store: false, temperature: 0 };
    const ns = { type: 'namespace', name: 'mcp__fs__', description: 'Files.',
                 tools: [fn('read_file'), fn('list_dir')] };
    const call = { type: 'function_call', call_id: 'c1', name: 'read_file', namespace: 'mcp__fs__',
                   arguments: '{}' };
    const input = [{ role: 'user', content: 'Read it.' }, call,
                   { type: 'function_call_output', call_id: 'c1', output: 'ok' }];
    const nested = await post(server, '/v1/responses', { ...base, tools: [ns], input });
    const flat = await post(server, '/v1/responses', {
      ...base, tools: [fn('mcp__fs__read_file'), fn('mcp__fs__list_dir')],
      input: [input[0], { ...call, name: 'mcp__fs__read_file', namespace: undefined }, input[2]] });
    assert.equal(nested.status, 200, JSON.stringify(nested.body));
    assert.equal(nested.body.usage.input_tokens, flat.body.usage.input_tokens);
    assert.equal(nested.body.output[0].content?.[0]?.text ?? null,
                 flat.body.output[0].content?.[0]?.text ?? null, 'the same prompt, the same reply');
  });

  test('--reject-unsupported-tools refuses them, naming the tool', async () => {
    strict = await startServer(dir, ['--reject-unsupported-tools']);
    const r = await post(strict, '/v1/responses', {
      model: 'qwen3_5', input: 'Hello.', max_output_tokens: 2, tools: [weather, { type: 'web_search' }] });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.param, 'tools[1].type');
    assert.match(r.body.error.message, /web_search/);
    const a = await post(strict, '/v1/messages', {
      max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }],
      tools: [{ type: 'bash_20250124', name: 'bash' }] });
    assert.equal(a.status, 400);
    assert.match(a.body.error.message, /bash_20250124/);
  });
});

describe('Responses conversations', () => {
  const dir = makeModel('qwen3_5');
  let server;
  before(async () => { server = await startServer(dir); });
  after(async () => { await server?.stop(); });
  const newTokens = (user) => `${user}<|im_end|>\n<|im_start|>assistant\n<think>\n`;

  test('item_reference inputs resolve to the stored output items they name', async () => {
    const client = server.client();
    const first = await client.responses.create({ model: 'qwen3_5', input: USER_MESSAGES[0],
      reasoning: { effort: 'medium' }, max_output_tokens: 12, temperature: 0 });
    const user = { role: 'user', content: USER_MESSAGES[1] };
    const body = { model: 'qwen3_5', reasoning: { effort: 'medium' }, max_output_tokens: 12,
                   temperature: 0, store: false };
    const echoed = await client.responses.create({ ...body,
      input: [{ role: 'user', content: USER_MESSAGES[0] }, ...first.output, user] });
    const referenced = await client.responses.create({ ...body,
      input: [{ role: 'user', content: USER_MESSAGES[0] },
              ...first.output.map((o) => ({ type: 'item_reference', id: o.id })), user] });
    assert.equal(referenced.usage.input_tokens, echoed.usage.input_tokens);
    assert.deepEqual(referenced.output.map(({ id, ...o }) => o), echoed.output.map(({ id, ...o }) => o));
    const missing = await post(server, '/v1/responses', { ...body,
      input: [user, { type: 'item_reference', id: `msg_${first.id}x` }] });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.param, 'input[1].id');
  });

  test('a stateless conversation (store: false, output echoed back, no key) reuses all but its ' +
       'new tokens on a hybrid model', async () => {
    const client = server.client();
    let input = [];
    for (let t = 0; t < 4; t++) {
      const user = { role: 'user', content: `${USER_MESSAGES[t + 2]} (stateless)` };
      input = [...input, user];
      const r = await client.responses.create({ model: 'qwen3_5', input, store: false,
        reasoning: { effort: 'medium' }, max_output_tokens: 10, temperature: 0,
        instructions: 'Stateless run.' });
      if (t > 0) {
        const fresh = await oracleTokenCount(dir, newTokens(user.content));
        assert.equal(r.usage.input_tokens_details.cached_tokens, r.usage.input_tokens - fresh,
                     `turn ${t + 1}: ${JSON.stringify(r.usage)}`);
      }
      input = [...input, ...r.output];
      await server.warmupsSettled();
    }
  });
});

describe('Anthropic cache_control breakpoints', () => {
  const dir = makeModel('qwen3_5');
  let server;
  before(async () => { server = await startServer(dir); });
  after(async () => { await server?.stop(); });

  test('a new session resumes from the deepest breakpoint it shares with an earlier one',
       async () => {
    const client = server.anthropic();
    const system = [{ type: 'text', text: 'You are a careful coding agent.' },
                    { type: 'text', text: 'Follow the project rules.', cache_control: { type: 'ephemeral' } }];
    const reminder = `<system-reminder>\nProject rules: ${USER_MESSAGES.join(' ')}\n</system-reminder>`;
    const session = (id, question) => client.messages.create({
      model: 'qwen3_5', max_tokens: 4, temperature: 0, system, metadata: { user_id: id },
      messages: [{ role: 'user', content: [
        { type: 'text', text: reminder, cache_control: { type: 'ephemeral' } },
        { type: 'text', text: question, cache_control: { type: 'ephemeral' } }] }] });
    const questionA = 'What does this repository build?';
    const a = await session('session-a', questionA);
    assert.equal(a.usage.cache_read_input_tokens, 0);
    await server.warmupsSettled();
    const b = await session('session-b', 'Which tests are slow?');
    // Where the reminder block ends, as recur finds it: the rendering cut there and continued two
    // ways agrees up to that token.
    const tok = Tokenizer.fromFile(join(dir, 'tokenizer.json'));
    const ids = async (text) => (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const head = '<|im_start|>system\nYou are a careful coding agent.\nFollow the project rules.' +
                 `<|im_end|>\n<|im_start|>user\n${reminder}`;
    // ... and that session A's own prompt agrees with (its next block starts after a newline).
    const common = (p, q) => { let n = 0; while (n < p.length && p[n] === q[n]) n++; return n; };
    const x = await ids(`${head}Alpha placeholder 1`);
    const shared = Math.min(common(x, await ids(`${head}? 2 zeta`)),
                            common(x, await ids(`${head}\n${questionA}`)));
    assert.ok(shared > 100, `the reminder is long (${shared} tokens)`);
    assert.equal(b.usage.cache_read_input_tokens, shared, JSON.stringify(b.usage));
    const stats = await server.stats();
    assert.ok(stats.snapshot.hits_shared >= 1, JSON.stringify(stats.snapshot));
  });
});
