// Anthropic's Messages API through the official @anthropic-ai/sdk: streaming and not, the event
// sequence, a tool round trip, errors and auth in Anthropic's shape, and a 6-turn conversation
// whose follow-up turns read all but their new tokens from the cache, byte-identical without it.
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { makeModel, startServer, oracleTokenCount } from './harness.mjs';
import { USER_MESSAGES } from './conversation.mjs';

const MODEL = 'qwen3_5';
// Qwen3.5's template opens a think block when thinking is on: a turn computes its user message,
// the tokens closing it and the generation prompt.
const newTokens = (user) => `${user}<|im_end|>\n<|im_start|>assistant\n<think>\n`;
const totalInput = (u) => u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
const thinking = { type: 'enabled', budget_tokens: 1024 };

async function converse(server, { key, system, stream = false, turns = 6 }) {
  const client = server.anthropic();
  const messages = [];
  const transcript = [];
  for (let t = 0; t < turns; t++) {
    const user = USER_MESSAGES[t];
    messages.push({ role: 'user', content: user });
    const body = { model: MODEL, system, messages, max_tokens: 16, temperature: 0, thinking,
                   metadata: { user_id: key } };
    const msg = stream ? await client.messages.stream(body).finalMessage()
                       : await client.messages.create(body);
    transcript.push({ user, content: JSON.stringify(msg.content), stop: msg.stop_reason,
                      usage: msg.usage });
    messages.push({ role: 'assistant', content: msg.content });  // echoed as returned
    await server.warmupsSettled();
  }
  return transcript;
}

describe('Anthropic Messages API', () => {
  const dir = makeModel(MODEL);
  let server, uncached;
  before(async () => { server = await startServer(dir, ['--parallel', '2']); });
  after(async () => { await server?.stop(); await uncached?.stop(); });

  test('a 6-turn conversation reads all but each new turn from the cache, and its bytes equal ' +
       'the cache-off transcript, streamed or not', async () => {
    uncached = await startServer(dir, ['--no-prompt-cache']);
    const system = [{ type: 'text', text: 'You are a concise assistant.' }];
    const withCache = await converse(server, { key: 'anthropic-6', system });
    const streamed = await converse(server, { key: 'anthropic-6s', system, stream: true });
    const without = await converse(uncached, { key: 'anthropic-6', system });
    const generated = (tr) => tr.map(({ content, stop, usage }) =>
      ({ content, stop, total: totalInput(usage), output: usage.output_tokens }));
    assert.deepEqual(generated(withCache), generated(without));
    assert.deepEqual(generated(streamed), generated(without));
    // The second conversation starts from the system prompt the first one computed.
    const shared = await oracleTokenCount(
      dir, `<|im_start|>system\n${system[0].text}<|im_end|>\n<|im_start|>user\n`);
    for (const tr of [withCache, streamed]) {
      assert.equal(tr[0].usage.cache_read_input_tokens, tr === withCache ? 0 : shared);
      for (let t = 1; t < tr.length; t++) {
        const u = tr[t].usage;
        const fresh = await oracleTokenCount(dir, newTokens(tr[t].user));
        assert.equal(u.cache_read_input_tokens, totalInput(u) - fresh,
                     `turn ${t + 1}: ${JSON.stringify(u)}`);
        // The rest was computed and stored (the completion snapshot holds the whole prompt).
        assert.equal(u.cache_creation_input_tokens, fresh);
        assert.equal(u.input_tokens, 0);
      }
    }
    for (const turn of without) {
      assert.equal(turn.usage.cache_read_input_tokens, 0);
      assert.equal(turn.usage.cache_creation_input_tokens, 0);
    }
  });

  test('the stream is the documented event sequence and assembles to the message', async () => {
    const client = server.anthropic();
    const body = { model: MODEL, max_tokens: 12, temperature: 0, thinking,
                   messages: [{ role: 'user', content: 'Say something.' }] };
    const whole = await client.messages.create(body);
    const events = [];
    for await (const ev of await client.messages.create({ ...body, stream: true })) events.push(ev);
    const types = events.map((e) => e.type);
    assert.equal(types[0], 'message_start');
    assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop']);
    assert.equal(events[0].message.role, 'assistant');
    assert.deepEqual(events[0].message.content, []);
    const blocks = [];
    for (const ev of events) {
      if (ev.type === 'content_block_start') {
        assert.equal(ev.index, blocks.length);
        blocks.push({ ...ev.content_block, open: true });
      } else if (ev.type === 'content_block_delta') {
        const b = blocks[ev.index];
        assert.ok(b?.open);
        if (ev.delta.type === 'text_delta') b.text += ev.delta.text;
        else if (ev.delta.type === 'thinking_delta') b.thinking += ev.delta.thinking;
        else if (ev.delta.type === 'signature_delta' && b.type === 'thinking') {
          b.signature = ev.delta.signature;  // a thinking block ends with it, as Anthropic's do
          b.signed = true;
        } else assert.fail(`unexpected delta ${ev.delta.type}`);
      } else if (ev.type === 'content_block_stop') {
        blocks[ev.index].open = false;
      }
    }
    assert.ok(blocks.every((b) => !b.open));
    assert.ok(blocks.every((b) => b.type !== 'thinking' || b.signed), JSON.stringify(blocks));
    assert.deepEqual(blocks.map(({ open, signed, ...b }) => b), whole.content);
    const delta = events.at(-2);
    assert.equal(delta.delta.stop_reason, whole.stop_reason);
    assert.equal(delta.usage.output_tokens, whole.usage.output_tokens);
    assert.equal(totalInput(delta.usage), totalInput(whole.usage));
    assert.equal(whole.stop_reason, 'max_tokens');
    assert.equal(whole.usage.output_tokens, 12);
    // count_tokens counts the same rendered prompt.
    const counted = await client.messages.countTokens({ model: MODEL, thinking,
                                                        messages: body.messages });
    assert.equal(counted.input_tokens, totalInput(whole.usage));
  });

  test('a tool round trip: tool_use and tool_result render back, and the next turn reuses them',
       async () => {
    const client = server.anthropic();
    const tools = [{ name: 'get_weather', description: 'Current weather of a city.',
                     input_schema: { type: 'object', properties: { city: { type: 'string' } },
                                     required: ['city'] } }];
    const messages = [
      { role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: [{ type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1',
                                  content: [{ type: 'text', text: 'Sunny, 21 C' }] }] },
    ];
    const body = { model: MODEL, tools, messages, max_tokens: 8, temperature: 0, thinking,
                   metadata: { user_id: 'anthropic-tools' } };
    const first = await client.messages.create(body);
    const withoutTools = await client.messages.countTokens({ model: MODEL, thinking, messages });
    assert.ok(totalInput(first.usage) > withoutTools.input_tokens, 'the tools are in the prompt');
    await server.warmupsSettled();
    const user = 'Thanks, that is all.';
    const second = await client.messages.create({ ...body, messages: [...messages,
      { role: 'assistant', content: first.content }, { role: 'user', content: user }] });
    const fresh = await oracleTokenCount(dir, newTokens(user));
    assert.equal(second.usage.cache_read_input_tokens, totalInput(second.usage) - fresh);
  });

  test('stop sequences end the text and are named', async () => {
    const client = server.anthropic();
    const body = { model: MODEL, max_tokens: 24, temperature: 0, thinking: { type: 'disabled' },
                   messages: [{ role: 'user', content: 'Say something.' }] };
    const base = await client.messages.create(body);
    const text = base.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const cut = text.slice(3, 5);
    if (cut.trim().length === 0) return;  // nothing usable to stop on in this output
    const stopped = await client.messages.create({ ...body, stop_sequences: ['zzzz', cut] });
    assert.equal(stopped.stop_reason, 'stop_sequence');
    assert.equal(stopped.stop_sequence, cut);
    assert.ok(!stopped.content.some((b) => b.type === 'text' && b.text.includes(cut)));
  });

  test('invalid requests are Anthropic-shaped errors naming the field', async () => {
    const client = server.anthropic();
    const ok = { model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] };
    await assert.rejects(client.messages.create({ ...ok, temperature: 5 }),
      (e) => e.status === 400 && e.error.type === 'error' &&
             e.error.error.type === 'invalid_request_error' && /temperature/.test(e.message));
    await assert.rejects(client.messages.create({ ...ok, messages: [{ role: 'tool', content: 'x' }] }),
      (e) => e.status === 400 && /messages\[0\]\.role/.test(e.message));
    await assert.rejects(client.messages.create({ ...ok, messages: [{ role: 'user',
      content: [{ type: 'image', source: {} }] }] }),
      (e) => e.status === 400 && /messages\[0\]\.content\[0\]\.type/.test(e.message));
    await assert.rejects(client.messages.create({ ...ok, model: 'claude-x' }),
      (e) => e.status === 404 && e.error.error.type === 'not_found_error');
    await assert.rejects(client.messages.create({ ...ok, max_tokens: (1 << 20) + 1 }),
      (e) => e.status === 400 && /max_tokens/.test(e.message));
    const raw = await server.json('/v1/messages', { method: 'POST', body: '{"messages": [' });
    assert.equal(raw.status, 400);
    assert.equal(raw.body.type, 'error');
    assert.equal(raw.body.error.type, 'invalid_request_error');
    const version = await server.json('/v1/messages', { method: 'POST', body: JSON.stringify(ok),
                                                        headers: { 'anthropic-version': 'v1' } });
    assert.equal(version.status, 400);
    assert.match(version.body.error.message, /anthropic-version/);
  });

  test('a client that disconnects mid-stream frees its sequence', async () => {
    const controller = new AbortController();
    const stream = await server.anthropic().messages.create(
      // ignore_eos (extension): the answer runs past the abort whatever this CPU's greedy tokens.
      { model: MODEL, max_tokens: 4000, stream: true, ignore_eos: true,
        messages: [{ role: 'user', content: 'Go on.' }] },
      { signal: controller.signal });
    let events = 0;
    try {
      // Leaves the loop itself too: once, under load, the loop was seen waiting forever after the
      // abort (no connection left, a 900 s timeout in ctest).
      for await (const _ of stream) {
        if (++events === 4) {
          controller.abort();
          break;
        }
      }
    } catch { /* the abort */ }
    for (let i = 0; i < 200; i++) {
      const text = await (await fetch(`${server.base}/metrics`)).text();
      const active = Number(text.match(/^recur_active_sequences (\S+)$/m)?.[1]);
      if (active === 0 && /route="\/v1\/messages"/.test(text)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.fail('the sequence was not freed');
  });
});

describe('Anthropic auth', () => {
  let server;
  before(async () => { server = await startServer(makeModel(MODEL), ['--api-key', 'sk-right']); });
  after(async () => { await server?.stop(); });

  test('x-api-key is the key; a wrong one is an authentication_error', async () => {
    const body = { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] };
    const ok = await server.anthropic({ apiKey: 'sk-right' }).messages.create(body);
    assert.equal(ok.type, 'message');
    await assert.rejects(server.anthropic({ apiKey: 'sk-wrong' }).messages.create(body),
      (e) => e.status === 401 && e.error.error.type === 'authentication_error');
  });
});
