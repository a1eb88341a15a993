// The demo conversation: three turns against a running recur through its OpenAI-compatible API,
// printing each answer and how many prompt tokens the prompt cache saved. Plain fetch, so that the
// demo needs no npm package; the tests (tests/e2e) hold the same kind of chat through the official
// OpenAI SDK. Usage: node scripts/demo-chat.mjs BASE_URL MODEL   (scripts/demo-chat.sh runs it)
const [baseURL, model] = process.argv.slice(2);
const messages = [{ role: 'system', content: 'You are a helpful assistant.' }];
const questions = ['Hello! What can you do?', 'Tell me a fact about octopuses.',
                   'And one about the Moon?'];

async function complete(messages) {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      model, messages, max_tokens: 48, temperature: 0.7, seed: 42,
      chat_template_kwargs: { enable_thinking: false },
    }),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${body.error?.message ?? JSON.stringify(body)}`);
  return body;
}

try {
  for (const question of questions) {
    messages.push({ role: 'user', content: question });
    const started = Date.now();
    const res = await complete(messages);
    const content = res.choices[0].message.content ?? '';
    const u = res.usage;
    console.log(`\nuser: ${question}`);
    console.log(`assistant: ${content}`);
    console.log(`  [${u.prompt_tokens} prompt tokens, ${u.prompt_tokens_details.cached_tokens} ` +
                `from the prompt cache, ${u.completion_tokens} generated, ` +
                `${Date.now() - started} ms]`);
    messages.push({ role: 'assistant', content });
    await new Promise((r) => setTimeout(r, 200));  // let the next-turn warm-up run
  }
} catch (err) {
  console.error(`demo chat: ${err.message}`);
  process.exitCode = 1;
}
