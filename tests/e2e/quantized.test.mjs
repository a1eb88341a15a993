// Quantized models through HTTP with the official SDK: a bf16 checkpoint quantized on load
// (--quantize) and an MLX-layout 4-bit checkpoint (recur make-model --bits 4) both serve
// multi-turn chats in which every follow-up turn computes only its new tokens, with transcripts
// byte-identical to the same server without the prompt cache.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeModel, startServer, oracleTokenCount } from './harness.mjs';
import { converse, generated } from './conversation.mjs';

const FAMILIES = ['qwen3_5', 'mamba2', 'qwen3', 'gemma3', 'llama'];

// The text a follow-up turn computes with thinking on (see multi_turn.test.mjs).
function newTokensOf(family, user) {
  if (family === 'gemma3') return `${user}<end_of_turn>\n<start_of_turn>model\n`;
  if (family === 'llama') return `${user}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`;
  return `${user}<|im_end|>\n<|im_start|>assistant\n${family === 'qwen3' ? '' : '<think>\n'}`;
}

async function checkReuse(dir, family, args, key) {
  const cached = await startServer(dir, args);
  const uncached = await startServer(dir, ['--no-prompt-cache', ...args]);
  try {
    const sampling = { temperature: 0.8, top_p: 0.95, seed: 99 };
    const withCache = await converse(cached, family, { sampling, key, turns: 4 });
    const without = await converse(uncached, family, { sampling, key, turns: 4, settle: false });
    assert.deepEqual(generated(withCache), generated(without));
    assert.equal(withCache[0].cached_tokens, 0);
    for (let t = 1; t < withCache.length; t++) {
      const turn = withCache[t];
      const fresh = await oracleTokenCount(dir, newTokensOf(family, turn.user));
      assert.equal(turn.cached_tokens, turn.prompt_tokens - fresh,
                   `turn ${t + 1}: ${turn.cached_tokens} cached of ${turn.prompt_tokens}`);
    }
    return { cached, log: cached.log() };
  } finally {
    await cached.stop();
    await uncached.stop();
  }
}

for (const family of FAMILIES) {
  describe(`quantized: ${family}`, () => {
    test('--quantize q4: multi-turn reuse, the same transcript as without the cache', async () => {
      const { log } = await checkReuse(makeModel(family),
                                       family, ['--quantize', 'q4', '--quantize-group-size', '32'],
                                       `${family}-q4-on-load`);
      assert.match(log, /quantized on load to 4 bits in groups of 32/);
    });

    test('an MLX 8-bit checkpoint: multi-turn reuse, the same transcript without the cache',
         async () => {
      const dir = makeModel(family, ['--bits', '8', '--group-size', '32']);
      await checkReuse(dir, family, [], `${family}-mlx-q8`);
    });
  });
}

describe('quantization errors name the limit', () => {
  test('an unsupported --quantize value is a usage error', async () => {
    await assert.rejects(startServer(makeModel('qwen3'), ['--quantize', 'q3']), /q4|q8/);
  });
});
