// Loads generated tokenizer.json files with the real Hugging Face tokenizers library and checks
// round trips, the added tokens and the chat template. Usage: node tokenizer_oracle_test.mjs
// NODE_MODULES_DIR CHECKPOINT_DIR...
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [nodeModules, ...dirs] = process.argv.slice(2);
const require = createRequire(path.join(nodeModules, 'noop.js'));
const { Tokenizer } = require('@anush008/tokenizers');
const { Template } = require('@huggingface/jinja');

let failures = 0;
function check(cond, what) {
  if (!cond) {
    failures++;
    console.error(`FAIL: ${what}`);
  }
}

const texts = [
  'Hello, world! How are you today?',
  'The quick brown fox jumps over the lazy dog.\n\nNew paragraph\twith a tab.',
  '  leading spaces, trailing spaces   ',
  'int main() { return 42; }  // comment\n    indented();',
  '{"role": "user", "content": "What is 12 * 7?"}',
  'Numbers 0123456789 and 3.14159e-10',
  '今天天气很好，我们一起去公园散步吧。',
  'Привет, мир! Καλημέρα. مرحبا. नमस्ते। สวัสดีครับ',
  'Emoji 😀🎉👍🏽 and symbols ∑∫√ € £ ¥ — “quoted” …',
  'unseen words: zyxwvut qqqq XXXXXXXX ✓✓✓ \u0000\u0001 end',
  'line\r\nwindows\rmac\n\n\n',
];

for (const dir of dirs) {
  const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const config = JSON.parse(readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
  const ids = Object.fromEntries(
    Object.entries(config.added_tokens_decoder).map(([id, t]) => [t.content, Number(id)]));
  const vocabSize = tok.getVocabSize(true);
  check(vocabSize === 1000 + 9, `${dir}: vocab size with added tokens is ${vocabSize}`);

  let nBytes = 0, nTokens = 0;
  for (const text of texts) {
    const enc = await tok.encode(text, null, { addSpecialTokens: true });
    const got = enc.getIds();
    const back = await tok.decode(got, false);
    check(back === text, `${dir}: round trip of ${JSON.stringify(text)} gave ${JSON.stringify(back)}`);
    check(got.every((id) => id < 1000), `${dir}: plain text used an added token: ${got}`);
    nBytes += Buffer.byteLength(text, 'utf8');
    nTokens += got.length;
  }
  // Merges were learned: English compresses to about 2 bytes per token (1000-token vocabulary).
  const english = (await tok.encode(texts[1], null, { addSpecialTokens: true })).getIds();
  check(english.length * 1.8 < Buffer.byteLength(texts[1]),
        `${dir}: ${english.length} tokens for ${Buffer.byteLength(texts[1])} bytes of English`);

  const chat = (await tok.encode('<|im_start|>user\nHi<|im_end|>\n<think>\n\n</think>', null,
                                 { addSpecialTokens: true })).getIds();
  check(chat[0] === ids['<|im_start|>'], `${dir}: <|im_start|> is not one token: ${chat}`);
  check(chat.includes(ids['<|im_end|>']) && chat.includes(ids['<think>']) &&
            chat.includes(ids['</think>']),
        `${dir}: added tokens missing in ${chat}`);
  check(ids['<|endoftext|>'] === 1000 && ids['<|im_start|>'] === 1001 && ids['<|im_end|>'] === 1002,
        `${dir}: added token ids ${JSON.stringify(ids)}`);
  const user = (await tok.encode('user', null, { addSpecialTokens: true })).getIds();
  check(chat[1] === user[0] && user.length === 1, `${dir}: "user" is ${user} and follows as ${chat[1]}`);
  const skipped = await tok.decode(chat, true);
  check(!skipped.includes('<|im_start|>') && skipped.includes('<think>'),
        `${dir}: skip-special decode gave ${JSON.stringify(skipped)}`);

  // The chat template renders a ChatML prompt with thinking switched off, dropping old reasoning.
  const template = new Template(config.chat_template);
  const messages = [
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: '<think>\nold reasoning\n</think>\n\nHello!' },
    { role: 'user', content: 'Bye' },
  ];
  const prompt = template.render({ messages, add_generation_prompt: true, enable_thinking: false });
  check(prompt.startsWith('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n'),
        `${dir}: prompt starts ${JSON.stringify(prompt.slice(0, 60))}`);
  check(!prompt.includes('old reasoning'), `${dir}: past reasoning kept: ${JSON.stringify(prompt)}`);
  check(prompt.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'),
        `${dir}: generation prompt ${JSON.stringify(prompt.slice(-60))}`);
  const promptIds = (await tok.encode(prompt, null, { addSpecialTokens: true })).getIds();
  check(await tok.decode(promptIds, false) === prompt, `${dir}: prompt round trip`);
  console.log(`${dir}: ${nTokens} tokens for ${nBytes} bytes, prompt ${promptIds.length} tokens`);
}

if (failures > 0) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('ok');
