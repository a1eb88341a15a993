// OpenAI's Responses API through the official SDK (client.responses): streaming and not, the
// event sequence, previous_response_id chains that send only the new items and reuse exactly the
// state before them, a tool round trip, the stored responses' GET and DELETE, tenancy and the
// store's limits; output byte-identical with the cache off.
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { makeModel, startServer, oracleTokenCount } from './harness.mjs';
import { USER_MESSAGES } from './conversation.mjs';

const MODEL = 'qwen3_5';
const newTokens = (user) => `${user}<|im_end|>\n<|im_start|>assistant\n<think>\n`;
const reasoning = { effort: 'medium' };  // thinking on

// The output items without ids, and without the fields the SDK's stream helper adds (parsed).
const items = (output) => JSON.stringify(output.map(({ id, ...item }) => item),
  (k, v) => (k === 'parsed' || k === 'parsed_arguments' ? undefined : v));

// A conversation kept by the server (chain: previous_response_id, only the new user message sent)
// or by the client (the whole input re-sent, output items echoed back).
async function converse(server, { chain, key, instructions, stream = false, turns = 6 }) {
  const client = server.client();
  let input = [];
  let previous = null;
  const transcript = [];
  for (let t = 0; t < turns; t++) {
    const user = { role: 'user', content: USER_MESSAGES[t] };
    const body = { model: MODEL, instructions, reasoning, max_output_tokens: 16, temperature: 0,
                   input: chain ? [user] : [...input, user] };
    if (chain && previous) body.previous_response_id = previous;
    if (key) body.prompt_cache_key = key;
    const r = stream ? await client.responses.stream(body).finalResponse()
                     : await client.responses.create(body);
    transcript.push({ user: user.content, output: items(r.output),
                      status: r.status, usage: r.usage, id: r.id });
    previous = r.id;
    input = [...body.input, ...r.output];
    await server.warmupsSettled();
  }
  return transcript;
}

const generated = (tr) => tr.map(({ output, status, usage }) =>
  ({ output, status, input: usage.input_tokens, output_tokens: usage.output_tokens }));

// firstCached: what the first turn reuses (the tenant's shared system prompt, once another
// conversation has computed it).
async function assertExactReuse(dir, transcript, firstCached = 0) {
  assert.equal(transcript[0].usage.input_tokens_details.cached_tokens, firstCached);
  for (let t = 1; t < transcript.length; t++) {
    const u = transcript[t].usage;
    const fresh = await oracleTokenCount(dir, newTokens(transcript[t].user));
    assert.equal(u.input_tokens_details.cached_tokens, u.input_tokens - fresh,
                 `turn ${t + 1}: ${JSON.stringify(u)}`);
  }
}

describe('OpenAI Responses API', () => {
  const dir = makeModel(MODEL);
  let server, uncached;
  before(async () => { server = await startServer(dir, ['--parallel', '2']); });
  after(async () => { await server?.stop(); await uncached?.stop(); });

  test('a previous_response_id chain of 6 turns sends only new items, reuses all but them, and ' +
       'equals the cache-off chain and the client-kept conversation', async () => {
    uncached = await startServer(dir, ['--no-prompt-cache']);
    const instructions = 'You are a concise assistant.';
    const chained = await converse(server, { chain: true, instructions });
    // Its own session: the same turns in the anonymous session would find the chain's entries.
    const streamed = await converse(server, { chain: true, instructions, stream: true,
                                              key: 'responses-streamed' });
    const resent = await converse(server, { chain: false, instructions, key: 'responses-resent' });
    const without = await converse(uncached, { chain: true, instructions });
    assert.deepEqual(generated(chained), generated(without));
    assert.deepEqual(generated(streamed), generated(without));
    assert.deepEqual(generated(resent), generated(without));
    const shared = await oracleTokenCount(
      dir, `<|im_start|>system\n${instructions}<|im_end|>\n<|im_start|>user\n`);
    await assertExactReuse(dir, chained);
    for (const tr of [streamed, resent]) await assertExactReuse(dir, tr, shared);
    for (const turn of without) assert.equal(turn.usage.input_tokens_details.cached_tokens, 0);
  });

  test('the stream is the documented event sequence and assembles to the response', async () => {
    const client = server.client();
    // Thinking off: the answer is output text.
    const body = { model: MODEL, input: USER_MESSAGES[0], max_output_tokens: 12, temperature: 0,
                   reasoning: { effort: 'none' }, store: false };
    const whole = await client.responses.create(body);
    const events = [];
    for await (const ev of await client.responses.create({ ...body, stream: true })) events.push(ev);
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 2), ['response.created', 'response.in_progress']);
    assert.equal(types.at(-1), 'response.incomplete');  // max_output_tokens reached
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    for (const t of ['response.output_item.added', 'response.content_part.added',
                     'response.output_text.delta', 'response.output_text.done',
                     'response.output_item.done']) {
      assert.ok(types.includes(t), `no ${t} in ${types.join(' ')}`);
    }
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    assert.equal(text, whole.output_text);
    const final = events.at(-1).response;
    assert.equal(items(final.output), items(whole.output));
    assert.equal(final.usage.output_tokens, 12);
    assert.equal(whole.status, 'incomplete');
    assert.equal(whole.incomplete_details.reason, 'max_output_tokens');
  });

  test('a tool round trip: function_call and its output render back, and the chain reuses them',
       async () => {
    const client = server.client();
    const tools = [{ type: 'function', name: 'get_weather', description: 'Current weather of a city.',
                     parameters: { type: 'object', properties: { city: { type: 'string' } },
                                   required: ['city'] } }];
    const input = [
      { role: 'user', content: 'What is the weather in Paris?' },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'Sunny, 21 C' },
    ];
    const first = await client.responses.create({ model: MODEL, tools, input, reasoning,
                                                  max_output_tokens: 8, temperature: 0 });
    const plain = await client.responses.create({ model: MODEL, input: input.slice(0, 1), reasoning,
                                                  max_output_tokens: 1, store: false });
    assert.ok(first.usage.input_tokens > plain.usage.input_tokens + 10, 'the call is in the prompt');
    await server.warmupsSettled();
    const user = 'Thanks, that is all.';
    const second = await client.responses.create({ model: MODEL, tools, reasoning, max_output_tokens: 8,
      temperature: 0, previous_response_id: first.id, input: [{ role: 'user', content: user }] });
    const fresh = await oracleTokenCount(dir, newTokens(user));
    assert.equal(second.usage.input_tokens_details.cached_tokens, second.usage.input_tokens - fresh);
    assert.equal(second.previous_response_id, first.id);
  });

  test('stored responses: GET returns them, DELETE removes them, other keys never see them',
       async () => {
    const client = server.client();
    const r = await client.responses.create({ model: MODEL, input: 'Hello.', max_output_tokens: 4,
                                              metadata: { run: 'store' } });
    const got = await client.responses.retrieve(r.id);
    assert.deepEqual(got.output, r.output);
    assert.deepEqual(got.metadata, { run: 'store' });
    await assert.rejects(server.client({ apiKey: 'sk-other' }).responses.retrieve(r.id),
                         (e) => e.status === 404);
    await assert.rejects(server.client({ apiKey: 'sk-other' }).responses.create(
      { model: MODEL, input: 'Hi.', previous_response_id: r.id }),
      (e) => e.status === 404 && e.param === 'previous_response_id');
    const deleted = await client.responses.delete(r.id).catch((e) => e);
    assert.ok(!(deleted instanceof Error), `${deleted}`);
    await assert.rejects(client.responses.retrieve(r.id), (e) => e.status === 404);
    const unstored = await client.responses.create({ model: MODEL, input: 'Hello.', max_output_tokens: 2,
                                                     store: false });
    await assert.rejects(client.responses.retrieve(unstored.id), (e) => e.status === 404);
  });

  test('invalid requests are 400s naming the field', async () => {
    const client = server.client();
    await assert.rejects(client.responses.create({ model: MODEL, input: 'x', temperature: 5 }),
                         (e) => e.status === 400 && e.param === 'temperature');
    await assert.rejects(client.responses.create({ model: MODEL }),
                         (e) => e.status === 400 && e.param === 'input');
    await assert.rejects(client.responses.create({ model: MODEL, input: [{ type: 'web_search_call' }] }),
                         (e) => e.status === 400 && e.param === 'input[0].type');
    await assert.rejects(client.responses.create({ model: 'gpt-5', input: 'x' }),
                         (e) => e.status === 404 && e.code === 'model_not_found');
  });
});

describe('Responses store limits', () => {
  let server;
  before(async () => {
    server = await startServer(makeModel(MODEL), ['--responses-store-bytes', '0']);
  });
  after(async () => { await server?.stop(); });

  test('a store of 0 bytes keeps nothing, and the 404 names the limits', async () => {
    const client = server.client();
    const r = await client.responses.create({ model: MODEL, input: 'Hello.', max_output_tokens: 2 });
    await assert.rejects(client.responses.create({ model: MODEL, input: 'Again.',
                                                   previous_response_id: r.id }),
      (e) => e.status === 404 && /--responses-store-bytes/.test(e.message) &&
             /--responses-store-ttl/.test(e.message));
  });
});
