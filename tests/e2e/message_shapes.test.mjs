// The message shapes coding agents and the official SDKs send, through the real SDKs on the
// Qwen3 and Qwen3.5 templates: the OpenAI tool loop (the SDK's assistant message with content
// null pushed back, the tool result as text parts), Codex's two developer messages on Responses,
// Claude Code's system message inside Anthropic `messages`, and an Anthropic prefill. Every
// request answers 200, and a follow-up turn computes only its new tokens: the normalised history
// renders the same way on every turn, so the cache reuses what the previous turn left.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeModel, startServer, oracleTokenCount } from './harness.mjs';

const FAMILIES = ['qwen3', 'qwen3_5'];
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Weather.',
                 parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];

// The generation prompt with thinking on (no request here turns it off).
const GEN = { qwen3: '<|im_start|>assistant\n', qwen3_5: '<|im_start|>assistant\n<think>\n' };
// What a turn that ends with a user message computes: the message, its end and the generation
// prompt (the turn's head, <|im_start|>user\n, was anticipated by the previous turn's warm-up).
const fresh = (family, user) => `${user}<|im_end|>\n${GEN[family]}`;

for (const family of FAMILIES) {
  describe(`message shapes: ${family}`, () => {
    const dir = makeModel(family);
    let server;
    after(async () => { await server?.stop(); });
    const start = async () => (server ??= await startServer(dir, ['--parallel', '2']));
    const count = (text) => oracleTokenCount(dir, text);

    test('the OpenAI SDK tool loop: content null + tool_calls, then the result as parts', async () => {
      await start();
      const client = server.client();
      const base = { model: family, max_tokens: 8, temperature: 0, tools: TOOLS,
                     prompt_cache_key: `${family}-tool-loop` };
      const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];
      const first = await client.chat.completions.create({ ...base, messages });
      // The message as the SDK returned it, made into what it returns for a tool call.
      const returned = first.choices[0].message;
      messages.push({ ...returned, content: null, tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] });
      messages.push({ role: 'tool', tool_call_id: 'call_1',
                      content: [{ type: 'text', text: 'Sunny,' }, { type: 'text', text: '20 degrees.' }] });
      await server.warmupsSettled();
      const second = await client.chat.completions.create({ ...base, messages });
      // The first turn's history (its prompt less the generation prompt) is reused at least.
      const history = first.usage.prompt_tokens - await count(GEN[family]);
      const cached2 = second.usage.prompt_tokens_details.cached_tokens;
      assert.ok(cached2 >= history && cached2 <= first.usage.prompt_tokens +
                first.usage.completion_tokens, `turn 2: ${cached2} cached, history ${history}`);
      // The follow-up after the tool turn's reply computes only the new user message.
      const reply = second.choices[0].message;
      messages.push(reply);
      messages.push({ role: 'user', content: 'Thanks, and tomorrow?' });
      await server.warmupsSettled();
      const third = await client.chat.completions.create({ ...base, messages });
      const n = await count(fresh(family, 'Thanks, and tomorrow?'));
      assert.equal(third.usage.prompt_tokens_details.cached_tokens, third.usage.prompt_tokens - n,
                   JSON.stringify(third.usage));
    });

    test('Codex: two developer messages through Responses, continued by previous_response_id', async () => {
      await start();
      const client = server.client();
      const input = [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Sandbox: read-only.' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files.' }] },
      ];
      const first = await client.responses.create({ model: family, input, max_output_tokens: 8,
                                                    temperature: 0 });
      assert.ok(['completed', 'incomplete'].includes(first.status), first.status);  // max_output_tokens
      await server.warmupsSettled();
      const second = await client.responses.create({
        model: family, previous_response_id: first.id, max_output_tokens: 8, temperature: 0,
        input: [{ type: 'message', role: 'user', content: 'Now the hidden ones.' }] });
      const n = await count(fresh(family, 'Now the hidden ones.'));
      assert.equal(second.usage.input_tokens_details.cached_tokens, second.usage.input_tokens - n,
                   JSON.stringify(second.usage));
    });

    test('Claude Code: a system message inside Anthropic messages', async () => {
      await start();
      const anthropic = server.anthropic();
      const key = `${family}-mid-system`;
      const messages = [{ role: 'user', content: 'Hello there.' }];
      const first = await anthropic.messages.create({ model: family, max_tokens: 8, messages,
                                                      system: 'Be brief.', metadata: { user_id: key } });
      messages.push({ role: 'assistant', content: first.content });
      messages.push({ role: 'system', content: 'Reminder: the todo list is empty.' });
      messages.push({ role: 'user', content: [{ type: 'text', text: 'Continue.',
                                                cache_control: { type: 'ephemeral' } }] });
      await server.warmupsSettled();
      const second = await anthropic.messages.create({ model: family, max_tokens: 8, messages,
                                                       system: 'Be brief.', metadata: { user_id: key } });
      const u = second.usage;
      const prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
      // Qwen3's template renders a late system turn (where the anticipated user turn's head parts);
      // Qwen3.5's refuses one, so its text opens the next user message.
      const computed = family === 'qwen3'
        ? 'system\nReminder: the todo list is empty.<|im_end|>\n<|im_start|>user\n' + fresh(family, 'Continue.')
        : fresh(family, 'Reminder: the todo list is empty.\n\nContinue.');
      assert.equal(u.cache_read_input_tokens, prompt - await count(computed), JSON.stringify(u));
    });

    test('Anthropic prefill: the reply continues the final assistant message', async () => {
      await start();
      const anthropic = server.anthropic();
      const key = `${family}-prefill`;
      const prefill = 'One, two,';
      const messages = [{ role: 'user', content: 'Count to three.' },
                        { role: 'assistant', content: prefill }];
      const first = await anthropic.messages.create({ model: family, max_tokens: 6, messages,
                                                      metadata: { user_id: key } });
      const u = first.usage;
      const prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
      // The prompt ends right after the prefill's text: no end of turn, no new assistant turn.
      const rendered = '<|im_start|>user\nCount to three.<|im_end|>\n<|im_start|>assistant\n' +
                       `<think>\n\n</think>\n\n${prefill}`;
      assert.equal(prompt, await count(rendered));
      const text = first.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      // The client sends the whole message back; the next turn reuses it and the reply.
      messages[1] = { role: 'assistant', content: prefill + text };
      messages.push({ role: 'user', content: 'Again, please.' });
      await server.warmupsSettled();
      const second = await anthropic.messages.create({ model: family, max_tokens: 6, messages,
                                                       metadata: { user_id: key } });
      const v = second.usage;
      const prompt2 = v.input_tokens + v.cache_read_input_tokens + v.cache_creation_input_tokens;
      assert.equal(v.cache_read_input_tokens, prompt2 - await count(fresh(family, 'Again, please.')),
                   JSON.stringify(v));
    });
  });
}
