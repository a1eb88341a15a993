// A scripted multi-turn conversation through the OpenAI SDK, recording everything the server
// returned so runs can be compared byte for byte.
export const USER_MESSAGES = [
  'Tell me about the weather on Mars.',
  'How cold does it get at night?',
  'Could people live there someday?',
  'What would they eat?',
  'Summarize our talk in one line.',
  'Thanks, that is all.',
  'One more: how far away is it?',
  'And how long does the trip take?',
];

export async function converse(server, model, opts) {
  const { turns = 6, thinking = true, sampling = { temperature: 0 }, key, salt, apiKey,
          system = 'You are a concise assistant.', maxTokens = 16, settle = true, offset = 0,
          between = null } = opts;
  const client = server.client({ apiKey });
  const messages = [{ role: 'system', content: system }];
  const transcript = [];
  for (let t = 0; t < turns; t++) {
    const user = USER_MESSAGES[(t + offset) % USER_MESSAGES.length];
    messages.push({ role: 'user', content: user });
    const body = {
      model, messages, max_tokens: maxTokens, logprobs: true, top_logprobs: 2,
      chat_template_kwargs: { enable_thinking: thinking },
      ...sampling,
    };
    if (sampling.seed !== undefined) body.seed = sampling.seed + t;
    if (key) body.prompt_cache_key = key;
    if (salt) body.cache_salt = salt;
    const res = await client.chat.completions.create(body);
    const choice = res.choices[0];
    const msg = choice.message;
    transcript.push({
      user,
      content: msg.content,
      reasoning: msg.reasoning_content ?? null,
      logprobs: JSON.stringify(choice.logprobs),
      finish: choice.finish_reason,
      prompt_tokens: res.usage.prompt_tokens,
      completion_tokens: res.usage.completion_tokens,
      cached_tokens: res.usage.prompt_tokens_details.cached_tokens,
    });
    // Timings differ from run to run: readable, but left out of transcript comparisons.
    Object.defineProperty(transcript.at(-1), 'timing', { value: res.x_recur_timing, enumerable: false });
    const reply = { role: 'assistant', content: msg.content ?? '' };
    if (msg.reasoning_content !== undefined && msg.reasoning_content !== null) {
      reply.reasoning_content = msg.reasoning_content;
    }
    messages.push(reply);
    if (settle) await server.warmupsSettled();
    if (between) await between(t);  // e.g. other tenants' traffic between this conversation's turns
  }
  return transcript;
}

// What a transcript must agree on across cache on/off and batched/solo: everything generated.
export function generated(transcript) {
  return transcript.map(({ content, reasoning, logprobs, finish, prompt_tokens, completion_tokens }) =>
    ({ content, reasoning, logprobs, finish, prompt_tokens, completion_tokens }));
}
