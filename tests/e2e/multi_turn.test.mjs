// Multi-turn reuse through HTTP with the official SDK: from turn 2 on, a turn computes only its
// new user message, the template tokens around it and the generation prompt; and the output is
// byte-identical with the cache off and when conversations run concurrently.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeModel, startServer, oracleTokenCount } from './harness.mjs';
import { converse, generated } from './conversation.mjs';

const FAMILIES = ['qwen3_5', 'mamba2', 'qwen3', 'gemma3', 'llama', 'qwen3_moe', 'granitemoehybrid', 'lfm2',
                  'nemotron_h', 'falcon_h1', 'qwen3_5_moe', 'qwen3_next', 'granitemoehybrid_moe',
                  'lfm2_moe'];
// The tiny gemma3 preset's sliding window: its conversations must run past 3 windows.
const GEMMA_WINDOW = 16;
const SAMPLINGS = { greedy: { temperature: 0 }, seeded: { temperature: 0.8, top_p: 0.95, seed: 1234 } };

// The text a turn must compute: its user message, the tokens closing it and the generation
// prompt. Qwen3's template (qwen3 checkpoints) adds an empty think block only when thinking is
// off; Qwen3.5's (qwen3_5 and the generated mamba2) opens one when thinking is on. Gemma 3's
// has no thinking switch and calls the assistant "model"; Llama 3.1's has none either, nor has
// Granite 4.0's, LFM2.5's or Falcon-H1's (ChatML turns, no think block).
function newTokensOf(family, user, thinking) {
  if (family === 'nemotron_h') {  // Nemotron 3's template: an empty think block when off
    return `${user}<|im_end|>\n<|im_start|>assistant\n${thinking ? '<think>\n' : '<think></think>'}`;
  }
  if (family === 'granitemoehybrid' || family === 'granitemoehybrid_moe') {
    return `${user}<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>`;
  }
  if (family === 'gemma3') return `${user}<end_of_turn>\n<start_of_turn>model\n`;
  if (family === 'lfm2' || family === 'lfm2_moe' || family === 'falcon_h1') return `${user}<|im_end|>\n<|im_start|>assistant\n`;
  if (family === 'llama') return `${user}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`;
  // The same tokenizer files (qwen3_next: Qwen3's tokenizer and, for now, Qwen3-0.6B's template).
  const qwen3 = family === 'qwen3' || family === 'qwen3_moe' || family === 'qwen3_next';
  const think = thinking ? (qwen3 ? '' : '<think>\n') : '<think>\n\n</think>\n\n';
  return `${user}<|im_end|>\n<|im_start|>assistant\n${think}`;
}

// Llama 3.1's template opens every conversation with the same system-turn head (knowledge cutoff
// and the fixed date) before the system message; dense KV shares it across sessions, so a first
// turn computes everything or reuses exactly that head stored by an earlier conversation.
const LLAMA_HEAD = '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n' +
                   'Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n';
// What the system message renders to at the start of a prompt, up to where the text of a
// conversation's first user message begins (Gemma 3 puts the system text at the head of the first
// user turn).
const SYSTEM_BLOCK = {
  qwen3_5: (s) => `<|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  mamba2: (s) => `<|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  qwen3: (s) => `<|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  qwen3_moe: (s) => `<|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  qwen3_5_moe: (s) => `<|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  qwen3_next: (s) => `<|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  gemma3: (s) => `<bos><start_of_turn>user\n${s}\n\n`,
  llama: (s) => `<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n${s}`,
  nemotron_h: (s) => `<|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  granitemoehybrid: (s) =>
    `<|start_of_role|>system<|end_of_role|>${s}<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>`,
  granitemoehybrid_moe: (s) =>
    `<|start_of_role|>system<|end_of_role|>${s}<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>`,
  lfm2: (s) => `<|startoftext|><|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  lfm2_moe: (s) => `<|startoftext|><|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
  falcon_h1: (s) => `<|begin_of_text|><|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n`,
};

async function firstTurnCached(dir, family) {
  return family === 'llama' ? [0, await oracleTokenCount(dir, LLAMA_HEAD)] : [0];
}

for (const family of FAMILIES) {
  describe(`multi-turn reuse: ${family}`, () => {
    const dir = makeModel(family);
    let cached, uncached;
    after(async () => {
      await cached?.stop();
      await uncached?.stop();
    });

    for (const thinking of [true, false]) {
      for (const [name, sampling] of Object.entries(SAMPLINGS)) {
        test(`thinking=${thinking} ${name}: each turn computes only its new tokens, and the ` +
             `transcript equals the one without the cache`, async () => {
          cached ??= await startServer(dir, ['--parallel', '4']);
          uncached ??= await startServer(dir, ['--no-prompt-cache', '--parallel', '4']);
          const key = `${family}-${thinking}-${name}`;
          // A system prompt of its own, so no earlier test's entries share a prefix with it.
          const system = `${name} thinking=${thinking}: you are a concise assistant.`;
          const withCache = await converse(cached, family, { thinking, sampling, key, system });
          const without = await converse(uncached, family, { thinking, sampling, key, system,
                                                             settle: false });
          assert.deepEqual(generated(withCache), generated(without));
          const first = withCache[0].cached_tokens;
          assert.ok((await firstTurnCached(dir, family)).includes(first), `first turn: ${first}`);
          for (let t = 1; t < withCache.length; t++) {
            const turn = withCache[t];
            const fresh = await oracleTokenCount(dir, newTokensOf(family, turn.user, thinking));
            assert.equal(turn.cached_tokens, turn.prompt_tokens - fresh,
                         `turn ${t + 1}: ${turn.cached_tokens} cached of ${turn.prompt_tokens}`);
            assert.equal(without[t].cached_tokens, 0);
            // One forward computes the new tokens, the history boundary's snapshot included: a
            // family with recurrent blocks records it inside the forward (src/model/capture.h).
            assert.equal(turn.timing.prefill_tokens, fresh, `turn ${t + 1} timing`);
            assert.equal(turn.timing.prefill_steps, 1,
                         `turn ${t + 1}: ${JSON.stringify(turn.timing)}`);
          }
          if (family === 'gemma3') {
            // Past three windows: later turns reuse the sliding-window rings' snapshots.
            assert.ok(withCache.at(-1).prompt_tokens > 3 * GEMMA_WINDOW,
                      `${withCache.at(-1).prompt_tokens} prompt tokens`);
          }
        });
      }
    }

    test('a new conversation resumes at a system prompt the tenant already computed', async () => {
      cached ??= await startServer(dir, ['--parallel', '4']);
      const system = 'A long shared system prompt that many sessions of one tenant start with.';
      const a = await converse(cached, family, { key: 'share-a', system, turns: 1 });
      const b = await converse(cached, family, { key: 'share-b', system, turns: 1, offset: 1 });
      const c = await converse(cached, family, { key: 'share-c', system, turns: 1, offset: 2,
                                                 salt: 'another-tenant' });
      assert.ok((await firstTurnCached(dir, family)).includes(a[0].cached_tokens),
                `first session: ${a[0].cached_tokens}`);
      assert.ok((await firstTurnCached(dir, family)).includes(c[0].cached_tokens),
                `another tenant: ${c[0].cached_tokens}`);
      const systemTokens = await oracleTokenCount(dir, SYSTEM_BLOCK[family](system));
      if (family === 'qwen3' || family === 'llama' || family === 'qwen3_moe') {
        // Dense KV is truncatable: the prefix store shares every common prefix, the user-turn
        // header after the system prompt included.
        assert.ok(b[0].cached_tokens >= systemTokens, `${b[0].cached_tokens} of ${systemTokens}`);
      } else {
        // Hybrid, recurrent and ring models: the tenant's shared snapshot at the system prompt.
        assert.equal(b[0].cached_tokens, systemTokens);
        assert.equal(b[0].timing.prefill_tokens, b[0].prompt_tokens - systemTokens);
      }
      const stats = await cached.stats();
      const store = ['qwen3', 'llama', 'qwen3_moe'].includes(family) ? stats.prefix : stats.snapshot;
      if (store === stats.snapshot) assert.ok(store.hits_shared >= 1, JSON.stringify(store));
    });

    test('conversations that start together with a new system prompt compute it once', async () => {
      const dense = ['qwen3', 'llama', 'qwen3_moe'].includes(family);
      cached ??= await startServer(dir, ['--parallel', '4']);
      const system = 'A new system prompt that three conversations of one tenant send at once.';
      const runs = await Promise.all([0, 1, 2].map((c) =>
        converse(cached, family, { key: `start-together-${c}`, system, turns: 1, offset: c })));
      const systemTokens = await oracleTokenCount(dir, SYSTEM_BLOCK[family](system));
      // Whichever was admitted first computed the system prompt; the others restored it, either
      // stored already or waited for while it was being computed.
      const counts = runs.map((r) => r[0].cached_tokens).sort((x, y) => x - y);
      if (dense) {
        // Dense: a waiter copies the system prompt's K/V from the first's live state (exactly the
        // system prompt); one admitted after the first's completion entry was stored shares more
        // of its prefix (the user turn's header) through the prefix store. The first may reuse
        // the part of the prompt earlier conversations shared (Llama's dated system header).
        const why = `${JSON.stringify(counts)}, system prompt ${systemTokens} tokens`;
        for (const n of counts.slice(1)) assert.ok(n >= systemTokens && n > counts[0], why);
      } else {
        assert.deepEqual(counts, [0, systemTokens, systemTokens]);
      }
      for (const r of runs) {
        assert.equal(r[0].timing.prefill_tokens, r[0].prompt_tokens - r[0].cached_tokens);
      }
    });

    test('four concurrent conversations produce the same bytes as each alone', async () => {
      cached ??= await startServer(dir, ['--parallel', '4']);
      const sampling = SAMPLINGS.seeded;
      const solo = [];
      for (let c = 0; c < 4; c++) {
        solo.push(await converse(cached, family, { sampling, key: `solo-${c}`, offset: c, turns: 3 }));
      }
      const together = await Promise.all([0, 1, 2, 3].map((c) =>
        converse(cached, family, { sampling, key: `together-${c}`, offset: c, turns: 3 })));
      for (let c = 0; c < 4; c++) assert.deepEqual(generated(together[c]), generated(solo[c]));
    });
  });
}
