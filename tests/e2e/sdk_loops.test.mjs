// Multi-turn tool loops through the SDKs people build agents with, against the real server: the
// Vercel AI SDK's default providers (@ai-sdk/openai: Responses and Chat Completions;
// @ai-sdk/anthropic: Messages) and LangChain's ChatOpenAI on the Responses API. Each turn appends
// what the SDK returned (`response.messages`) as the SDK documents, and from turn 2 on it must
// compute only its new tokens: the cached tokens the SDK reports are the prompt minus exactly
// those. The checkpoints have random weights and never call a tool by themselves, so the tool
// round trips are put into the history in the SDK's own message format.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeModel, startServer, oracleTokenCount } from './harness.mjs';
import { USER_MESSAGES } from './conversation.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../node/package.json'));
const { generateText, streamText, tool } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');
const { createAnthropic } = require('@ai-sdk/anthropic');
const { ChatOpenAI } = require('@langchain/openai');
const { HumanMessage, SystemMessage } = require('@langchain/core/messages');
const { z } = require('zod');

const WEATHER = 'Sunny, 21 C';
const tools = {
  get_weather: tool({
    description: 'Current weather of a city.',
    inputSchema: z.object({ city: z.string() }),
    execute: async () => WEATHER,
  }),
};

// An assistant turn that called get_weather and the tool's answer, as ModelMessages.
const toolRound = (id, city) => [
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'get_weather',
                                    input: { city } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'get_weather',
                              output: { type: 'text', value: WEATHER } }] },
];

// Qwen3.5's template opens a think block when thinking is on; both close an empty one when off.
const generationPrompt = (family, thinking) => '<|im_start|>assistant\n' +
  (thinking ? (family === 'qwen3_5' ? '<think>\n' : '') : '<think>\n\n</think>\n\n');

// The text a turn computes: its user message, the tool round trip after it (if any) and the
// generation prompt; everything before the user message was stored by the previous turn's
// warm-up. A tool call after the last user message renders with an empty think block on Qwen3.5,
// and as a JSON object on Qwen3.
function newTokens(family, { user, city, thinking }) {
  const call = family === 'qwen3_5'
    ? `<think>\n\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n${city}\n` +
      '</parameter>\n</function>\n</tool_call>'
    : `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${city}"}}\n</tool_call>`;
  const round = city
    ? `<|im_start|>assistant\n${call}<|im_end|>\n<|im_start|>user\n<tool_response>\n${WEATHER}\n` +
      '</tool_response><|im_end|>\n'
    : '';
  return `${user}<|im_end|>\n${round}${generationPrompt(family, thinking)}`;
}

// A fetch that records each request's route, body and status, to tell what the SDK sent.
function recordingFetch() {
  const sent = [];
  const wrapped = async (url, init) => {
    const r = await fetch(url, init);
    sent.push({ path: new URL(String(url)).pathname, body: JSON.parse(init.body), status: r.status });
    return r;
  };
  return { sent, fetch: wrapped };
}

// One turn through generateText or streamText, reduced to what the test judges.
async function turn(stream, args) {
  if (!stream) {
    const r = await generateText(args);
    return { usage: r.usage, messages: r.response.messages, toolCalls: r.toolCalls };
  }
  let failure = null;
  const s = streamText({ ...args, onError: ({ error }) => { failure = error; } });
  await s.consumeStream();
  if (failure) throw failure;
  return { usage: await s.usage, messages: (await s.response).messages, toolCalls: await s.toolCalls };
}

// Whether the SDK keeps the reply in the history: a text, reasoning or tool-call part (bookkeeping
// parts, such as the Anthropic stream's message_start, are not sent back).
const keptReply = (messages) => messages.some((m) => m.role === 'assistant' &&
  m.content.some((p) => ['text', 'reasoning', 'tool-call'].includes(p.type)));

// The Vercel AI SDK's providers, with the route each one calls. `openai(MODEL)` is the Responses
// API in AI SDK 5 and later (checked below: it posts to /v1/responses). The Chat Completions model
// runs with thinking off (`reasoningEffort: 'none'`, sent as `reasoning_effort`): that provider
// drops `reasoning_content`, so a reply that is only reasoning would come back as no message.
const PROVIDERS = {
  'openai()': { route: '/v1/responses', model: (p) => p.openai(p.name) },
  'openai.chat()': { route: '/v1/chat/completions', model: (p) => p.openai.chat(p.name),
                     providerOptions: { openai: { reasoningEffort: 'none' } }, thinking: false },
  'openai.responses()': { route: '/v1/responses', model: (p) => p.openai.responses(p.name) },
  'anthropic()': { route: '/v1/messages', model: (p) => p.anthropic(p.name) },
};

for (const family of ['qwen3_5', 'qwen3']) {
  describe(`SDK tool loops: ${family}`, () => {
    const dir = makeModel(family);
    let server;
    before(async () => { server = await startServer(dir); });
    after(async () => { await server?.stop(); });

    for (const [name, provider] of Object.entries(PROVIDERS)) {
      test(`the AI SDK's ${name}: 3 turns with tool round trips, each computing only its new ` +
           'tokens', async () => {
        const rec = recordingFetch();
        const openai = createOpenAI({ baseURL: `${server.base}/v1`, apiKey: 'sk-none',
                                      fetch: rec.fetch });
        // @ai-sdk/anthropic appends /messages to its baseURL (default https://api.anthropic.com/v1).
        const anthropic = createAnthropic({ baseURL: `${server.base}/v1`, apiKey: 'sk-none',
                                            fetch: rec.fetch });
        const model = provider.model({ openai, anthropic, name: family });
        const thinking = provider.thinking ?? true;
        // A system prompt of its own: no other conversation shares a prefix past the tools.
        const system = `${name} on ${family}: you are a concise assistant.`;
        const plan = [
          { user: USER_MESSAGES[0], city: 'Paris' },
          { user: USER_MESSAGES[1] },
          { user: USER_MESSAGES[2], city: 'Lyon' },
        ];
        let messages = [];
        let previous = null;  // the previous turn's prompt tokens and whether its reply came back
        for (const [t, step] of plan.entries()) {
          messages.push({ role: 'user', content: step.user });
          if (step.city) messages.push(...toolRound(`call_${t}`, step.city));
          // Turn 2 streams, so every API is driven both ways.
          const r = await turn(t === 1, { model, system, messages, tools, maxOutputTokens: 6,
                                          temperature: 0, providerOptions: provider.providerOptions });
          assert.deepEqual(r.toolCalls, [], 'the expected counts assume a reply without calls');
          // AI SDK 7's usage: inputTokens is the whole prompt (Anthropic's three input fields
          // added up), inputTokenDetails.cacheReadTokens its cached part.
          const u = r.usage;
          const cached = u.inputTokenDetails.cacheReadTokens;
          const why = `turn ${t + 1}: ${JSON.stringify(u)}`;
          if (previous?.kept) {
            const fresh = await oracleTokenCount(dir, newTokens(family, { ...step, thinking }));
            assert.equal(cached, u.inputTokens - fresh, why);
          } else if (previous) {
            // The SDK left the previous reply out: its provider drops an assistant message without
            // text, and the tiny qwen3 checkpoint answers only whitespace (trimmed to ""). The
            // prompt then lacks the reply the warm-up anticipated; a dense model still shares
            // the previous prompt up to its generation prompt.
            assert.equal(family, 'qwen3', `${why}: the hybrid model's replies are all kept`);
            const genPrompt = await oracleTokenCount(dir, generationPrompt(family, thinking));
            assert.ok(cached >= previous.prompt - genPrompt && cached < u.inputTokens, why);
          }
          previous = { prompt: u.inputTokens, kept: keptReply(r.messages) };
          messages = [...messages, ...r.messages];
          await server.warmupsSettled();
        }
        assert.deepEqual(rec.sent.map((s) => [s.path, s.status]), plan.map(() => [provider.route, 200]));
        if (provider.route === '/v1/responses') {
          // The SDK sends its stored replies back as item_reference items; recur resolves them.
          for (const s of rec.sent.slice(1)) {
            assert.ok(s.body.input.some((i) => i.type === 'item_reference'), JSON.stringify(s.body));
          }
        }
      });
    }

    test('LangChain ChatOpenAI (Responses API): stateless turns reuse all but their new tokens',
         async () => {
      const rec = recordingFetch();
      const llm = new ChatOpenAI({ model: family, apiKey: 'sk-none', useResponsesApi: true,
                                   configuration: { baseURL: `${server.base}/v1`, fetch: rec.fetch },
                                   maxTokens: 6, temperature: 0 });
      const messages = [new SystemMessage(`LangChain on ${family}: you are a concise assistant.`)];
      const cached = [];
      for (let t = 0; t < 4; t++) {
        const user = USER_MESSAGES[t + 3];
        messages.push(new HumanMessage(user));
        const reply = await llm.invoke(messages);
        const u = reply.usage_metadata;
        cached.push(u.input_token_details.cache_read);
        if (t > 0) {
          const fresh = await oracleTokenCount(dir, newTokens(family, { user, thinking: true }));
          assert.equal(u.input_token_details.cache_read, u.input_tokens - fresh,
                       `turn ${t + 1}: ${JSON.stringify(u)}`);
          assert.ok(cached[t] > cached[t - 1], JSON.stringify(cached));
        }
        messages.push(reply);
        await server.warmupsSettled();
      }
      // What LangChain sends: the whole history each turn (its earlier output items echoed whole,
      // ids included), no previous_response_id, and no `store` (so recur's default, true): these
      // requests carry no session key, so they are in the tenant's anonymous session.
      for (const [t, s] of rec.sent.entries()) {
        assert.equal(s.path, '/v1/responses');
        assert.equal(s.status, 200);
        assert.equal(s.body.previous_response_id, undefined);
        assert.equal(s.body.store, undefined);
        assert.equal(s.body.input.filter((i) => i.role === 'user').length, t + 1);
      }
    });
  });
}
