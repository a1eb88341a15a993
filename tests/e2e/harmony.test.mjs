// gpt-oss's harmony format through HTTP with the official OpenAI and Anthropic SDKs, on a
// generated gpt_oss checkpoint (random weights: its replies are text without harmony headers,
// which is content; calls and JSON answers are forced by tool_choice and response_format, whose
// headers the prompt ends with). Multi-turn conversations on the three APIs read exactly all but
// each new turn from the cache (the template re-renders a reply without its analysis, so the
// warm-up's prefix is what a later turn reuses) and equal the cache-off transcript; a tool round
// trip on each API; streams that never show a marker and assemble to the non-streamed reply; the
// reasoning effort reaching the template.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, basename, dirname } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { makeModel, startServer, oracleTokenCount, RECUR, tempDir } from './harness.mjs';
import { USER_MESSAGES } from './conversation.mjs';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '../node/package.json'));
const { Tokenizer } = require('@anush008/tokenizers');

const FAMILY = 'gpt_oss';
const MARKERS = ['<|start|>', '<|end|>', '<|message|>', '<|channel|>', '<|constrain|>',
                 '<|return|>', '<|call|>'];
// After an answer, a turn computes its user message, the tokens closing it and the generation
// prompt: the warm-up computed the rest (the template re-renders the reply without analysis).
const newTokens = (user) => `${user}<|end|><|start|>assistant`;
const SYSTEM = 'You are a concise assistant.';
const TOOLS = [{ type: 'function', function: {
  name: 'get_weather', description: 'Get the weather for a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const totalInput = (u) => u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;

function assertNoMarkers(text, what) {
  for (const m of MARKERS) assert.ok(!(text ?? '').includes(m), `${what} shows ${m}: ${text}`);
}

// The prompt recur renders for `messages` (as gpt-oss's template takes them), tokenized by the HF
// tokenizer: the oracle's view of a prompt.
async function promptTokens(dir, messages, tools) {
  const file = join(tempDir('harmony-msgs'), 'chat.json');
  writeFileSync(file, JSON.stringify({ messages, tools }));
  const text = execFileSync(RECUR, ['template', '-m', dir, '--messages', file],
                            { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const tok = Tokenizer.fromFile(join(dir, 'tokenizer.json'));
  return (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
}

function commonPrefix(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) ++i;
  return i;
}

// What a turn whose last message is `last` reuses after the warm-up: the tokens its prompt shares
// with the same conversation ending in two placeholder messages that share nothing (what the
// server anticipated: ChatFormatter::next_turn_prefix).
async function anticipated(dir, history, last, tools) {
  const withText = (content) => promptTokens(dir, [...history, { ...last, content }], tools);
  const real = await withText(last.content);
  const a = await withText('Alpha placeholder 1');
  const b = await withText('? 2 zeta');
  return Math.min(commonPrefix(a, b), commonPrefix(real, a));
}

async function chatConversation(server, model, { key, stream = false, turns = 4 }) {
  const client = server.client();
  const messages = [{ role: 'system', content: SYSTEM }];
  const transcript = [];
  for (let t = 0; t < turns; t++) {
    const user = USER_MESSAGES[t];
    messages.push({ role: 'user', content: user });
    const body = { model, messages, max_tokens: 12, temperature: 0, logprobs: true,
                   reasoning_effort: 'low', prompt_cache_key: key };
    let msg, usage, finish;
    if (stream) {
      let content = '', reasoning = '';
      for await (const chunk of await client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } })) {
        if (chunk.usage) usage = chunk.usage;
        const c = chunk.choices[0];
        if (!c) continue;
        assertNoMarkers(c.delta.content, 'delta.content');
        assertNoMarkers(c.delta.reasoning_content, 'delta.reasoning_content');
        content += c.delta.content ?? '';
        reasoning += c.delta.reasoning_content ?? '';
        finish = c.finish_reason ?? finish;
      }
      msg = { content, reasoning_content: reasoning || undefined };
    } else {
      const res = await client.chat.completions.create(body);
      msg = res.choices[0].message;
      usage = res.usage;
      finish = res.choices[0].finish_reason;
      assertNoMarkers(msg.content, 'content');
      // Logprobs cover the content exactly.
      const bytes = Buffer.concat(res.choices[0].logprobs.content.map((e) => Buffer.from(e.bytes)));
      assert.equal(bytes.toString(), msg.content ?? '');
    }
    transcript.push({ user, content: msg.content ?? '', reasoning: msg.reasoning_content ?? null,
                      finish, prompt: usage.prompt_tokens, output: usage.completion_tokens,
                      cached: usage.prompt_tokens_details.cached_tokens });
    const reply = { role: 'assistant', content: msg.content ?? '' };
    if (msg.reasoning_content) reply.reasoning_content = msg.reasoning_content;
    messages.push(reply);
    await server.warmupsSettled();
  }
  return transcript;
}

const generated = (tr) => tr.map(({ cached, ...rest }) => rest);

async function assertExactReuse(dir, tr, cachedOf = (t) => t.cached, totalOf = (t) => t.prompt) {
  for (let t = 1; t < tr.length; t++) {
    const fresh = await oracleTokenCount(dir, newTokens(tr[t].user));
    assert.equal(cachedOf(tr[t]), totalOf(tr[t]) - fresh,
                 `turn ${t + 1}: ${JSON.stringify(tr[t])}`);
  }
}

describe('gpt-oss harmony', () => {
  const dir = makeModel(FAMILY);
  const model = basename(dir);
  let server, uncached;
  before(async () => { server = await startServer(dir, ['--parallel', '2']); });
  after(async () => { await server?.stop(); await uncached?.stop(); });

  test('chat completions: each later turn computes only its new tokens, streamed or not, and ' +
       'the transcript equals the cache-off one', async () => {
    uncached = await startServer(dir, ['--no-prompt-cache']);
    const withCache = await chatConversation(server, model, { key: 'harmony-chat' });
    const streamed = await chatConversation(server, model, { key: 'harmony-chat-s', stream: true });
    const without = await chatConversation(uncached, model, { key: 'harmony-chat' });
    assert.deepEqual(generated(withCache), generated(without));
    assert.deepEqual(generated(streamed), generated(without));
    await assertExactReuse(dir, withCache);
    await assertExactReuse(dir, streamed);
    for (const turn of without) assert.equal(turn.cached, 0);
  });

  test('without the warm-up a later turn still reuses its whole history before the reply',
       async () => {
    const cold = await startServer(dir, ['--no-prompt-cache-warmup']);
    try {
      const client = cold.client();
      const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Hi.' }];
      const first = await client.chat.completions.create(
        { model, messages, max_tokens: 8, temperature: 0, prompt_cache_key: 'cold' });
      messages.push({ role: 'assistant', content: first.choices[0].message.content ?? '' });
      messages.push({ role: 'user', content: 'More.' });
      const second = await client.chat.completions.create(
        { model, messages, max_tokens: 8, temperature: 0, prompt_cache_key: 'cold' });
      // The reply re-renders as `<|start|>assistant<|channel|>final...`: the history snapshot
      // (the first prompt without its generation prompt) is what it shares with the turn before.
      const head = await oracleTokenCount(dir, '<|start|>assistant');
      assert.equal(second.usage.prompt_tokens_details.cached_tokens,
                   first.usage.prompt_tokens - head);
    } finally {
      await cold.stop();
    }
  });

  test('Anthropic messages: later turns read all but their new tokens from the cache', async () => {
    const client = server.anthropic();
    const messages = [];
    const transcript = [];
    for (let t = 0; t < 4; t++) {
      messages.push({ role: 'user', content: USER_MESSAGES[t] });
      const body = { model, system: SYSTEM, messages, max_tokens: 12, temperature: 0,
                     thinking: { type: 'enabled', budget_tokens: 1024 },
                     metadata: { user_id: 'harmony-anthropic' } };
      const msg = t % 2 ? await client.messages.stream(body).finalMessage()
                        : await client.messages.create(body);
      for (const block of msg.content) {
        assertNoMarkers(block.text ?? block.thinking ?? '', `${block.type} block`);
      }
      transcript.push({ user: USER_MESSAGES[t], usage: msg.usage });
      messages.push({ role: 'assistant', content: msg.content });
      await server.warmupsSettled();
    }
    await assertExactReuse(dir, transcript, (t) => t.usage.cache_read_input_tokens,
                           (t) => totalInput(t.usage));
    for (const t of transcript.slice(1)) {
      const fresh = await oracleTokenCount(dir, newTokens(t.user));
      assert.equal(t.usage.cache_creation_input_tokens, fresh);
    }
  });

  test('Responses: a previous_response_id chain reuses all but each new turn', async () => {
    const client = server.client();
    let previous = null;
    const transcript = [];
    for (let t = 0; t < 4; t++) {
      const body = { model, instructions: SYSTEM, reasoning: { effort: 'high' },
                     input: [{ role: 'user', content: USER_MESSAGES[t] }],
                     max_output_tokens: 12, temperature: 0 };
      if (previous) body.previous_response_id = previous;
      const r = t % 2 ? await client.responses.stream(body).finalResponse()
                      : await client.responses.create(body);
      assertNoMarkers(r.output_text, 'output_text');
      transcript.push({ user: USER_MESSAGES[t], usage: r.usage });
      previous = r.id;
      await server.warmupsSettled();
    }
    await assertExactReuse(dir, transcript, (t) => t.usage.input_tokens_details.cached_tokens,
                           (t) => t.usage.input_tokens);
  });

  test('chat completions: a forced call, its result, and the next turn reuses all before the ' +
       'result', async () => {
    const client = server.client();
    const messages = [{ role: 'system', content: SYSTEM },
                      { role: 'user', content: 'What is the weather in Oslo?' }];
    const tool_choice = { type: 'function', function: { name: 'get_weather' } };
    const body = { model, messages, tools: TOOLS, tool_choice, max_tokens: 40, temperature: 0,
                   prompt_cache_key: 'harmony-tools' };
    const res = await client.chat.completions.create(body);
    const choice = res.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
    // Streamed: the same call, in one delta at the end, no content.
    const deltas = [];
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
      deltas.push(chunk.choices[0]?.delta ?? {});
    }
    const streamedCalls = deltas.filter((d) => d.tool_calls).flatMap((d) => d.tool_calls);
    assert.deepEqual(streamedCalls.map((c) => c.function),
                     choice.message.tool_calls.map((c) => c.function));
    assert.ok(deltas.every((d) => !d.content));
    await server.warmupsSettled();

    messages.push(choice.message);
    const result = { role: 'tool', tool_call_id: call.id, content: 'Sunny, 20 degrees.' };
    messages.push(result);
    const next = await client.chat.completions.create(
      { model, messages, tools: TOOLS, max_tokens: 12, temperature: 0,
        prompt_cache_key: 'harmony-tools' });
    const history = [messages[0], messages[1],
                     { role: 'assistant', content: '',
                       tool_calls: [{ id: call.id, type: 'function',
                                      function: { name: call.function.name,
                                                  arguments: JSON.parse(call.function.arguments) } }] }];
    const shared = await anticipated(dir, history, result, TOOLS);
    assert.equal(next.usage.prompt_tokens_details.cached_tokens, shared);
    assert.equal(next.usage.prompt_tokens,
                 (await promptTokens(dir, [...history, result], TOOLS)).length);
  });

  test('Anthropic and Responses: a forced call comes back as their call items', async () => {
    const anthropic = server.anthropic();
    const msg = await anthropic.messages.create({
      model, max_tokens: 40, temperature: 0, messages: [{ role: 'user', content: 'Oslo?' }],
      tools: [{ name: 'get_weather', description: 'Weather.',
                input_schema: TOOLS[0].function.parameters }],
      tool_choice: { type: 'tool', name: 'get_weather' } });
    assert.equal(msg.stop_reason, 'tool_use');
    const use = msg.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.equal(typeof use.input.city, 'string');
    assert.ok(!msg.content.some((b) => b.type === 'text' && b.text));

    const client = server.client();
    const r = await client.responses.create({
      model, max_output_tokens: 40, temperature: 0, input: 'Oslo?',
      tools: [{ type: 'function', name: 'get_weather', description: 'Weather.',
                parameters: TOOLS[0].function.parameters }],
      tool_choice: { type: 'function', name: 'get_weather' } });
    const fc = r.output.find((i) => i.type === 'function_call');
    assert.equal(fc.name, 'get_weather');
    assert.equal(typeof JSON.parse(fc.arguments).city, 'string');
    // The call's result, sent back: a reply follows.
    const follow = await client.responses.create({
      model, max_output_tokens: 8, temperature: 0, previous_response_id: r.id,
      input: [{ type: 'function_call_output', call_id: fc.call_id, output: 'sunny' }] });
    assert.ok(['completed', 'incomplete'].includes(follow.status));
  });

  test('required with several tools asks to name one; a JSON answer is a final message',
       async () => {
    const client = server.client();
    const two = [...TOOLS, { type: 'function', function: { name: 'get_time', parameters: {} } }];
    await assert.rejects(client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'x' }], tools: two, tool_choice: 'required' }),
    (e) => e.status === 400 && /name it in tool_choice/.test(e.message));
    const res = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Give me JSON.' }], max_tokens: 200,
      temperature: 0, response_format: { type: 'json_object' } });
    if (res.choices[0].finish_reason === 'stop') {
      assert.equal(typeof JSON.parse(res.choices[0].message.content), 'object');
    }
    assert.ok(res.choices[0].message.content.startsWith('{'));
  });

  test('the reasoning effort reaches the template', async () => {
    const logged = await startServer(dir, ['--log-prompts', '--log-level', 'debug']);
    try {
      const client = logged.client();
      for (const effort of ['low', 'high']) {
        await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }],
                                               max_tokens: 1, reasoning_effort: effort });
        assert.match(logged.log(), new RegExp(`Reasoning: ${effort}\\\\n`));
      }
      await logged.anthropic().messages.create({
        model, max_tokens: 1, messages: [{ role: 'user', content: 'y' }],
        thinking: { type: 'enabled', budget_tokens: 20000 } });
      assert.equal(logged.log().match(/Reasoning: high\\n/g).length, 2);
    } finally {
      await logged.stop();
    }
  });
});
