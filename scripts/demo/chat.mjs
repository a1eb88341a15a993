// The demo conversation: three turns through the official OpenAI SDK against a running recur,
// printing each answer and how many prompt tokens the cache saved.
// Usage: node scripts/demo/chat.mjs BASE_URL MODEL   (scripts/demo-chat.sh runs it)
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'demo', maxRetries: 0 });
const messages = [{ role: 'system', content: 'You are a helpful assistant.' }];
const questions = ['Hello! What can you do?', 'Tell me a fact about octopuses.',
                   'And one about the Moon?'];

for (const question of questions) {
  messages.push({ role: 'user', content: question });
  const started = Date.now();
  const res = await client.chat.completions.create({
    model, messages, max_tokens: 48, temperature: 0.7, seed: 42,
    chat_template_kwargs: { enable_thinking: false },
  });
  const msg = res.choices[0].message;
  const u = res.usage;
  console.log(`\nuser: ${question}`);
  console.log(`assistant: ${msg.content}`);
  console.log(`  [${u.prompt_tokens} prompt tokens, ${u.prompt_tokens_details.cached_tokens} from ` +
              `the prompt cache, ${u.completion_tokens} generated, ${Date.now() - started} ms]`);
  messages.push({ role: 'assistant', content: msg.content ?? '' });
  await new Promise((r) => setTimeout(r, 200));  // let the next-turn warm-up run
}
