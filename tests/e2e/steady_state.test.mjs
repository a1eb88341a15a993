// Steady-state cache memory: after N turns of K conversations the snapshot store holds at most
// one entry per (conversation, origin); supersedes grow with the turns; nothing is LRU-evicted;
// follow-up turns restore without a copy.
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { makeModel, startServer } from './harness.mjs';
import { converse } from './conversation.mjs';

const K = 3;
const N = 5;
const ORIGINS = 3;  // completion, boundary, warmup

for (const family of ['qwen3_5', 'mamba2', 'granitemoehybrid', 'lfm2', 'nemotron_h', 'falcon_h1',
                      'qwen3_5_moe', 'qwen3_next', 'granitemoehybrid_moe',
                      'lfm2_moe']) {
  for (const named of [true, false]) {
    describe(`steady state: ${family}, ${named ? 'named' : 'anonymous'} sessions`, () => {
      let server;
      before(async () => { server = await startServer(makeModel(family), ['--parallel', '4']); });
      after(async () => { await server?.stop(); });

      test(`${K} conversations x ${N} turns keep one entry per conversation and origin`, async () => {
        const runs = [];
        for (let c = 0; c < K; c++) {
          runs.push(converse(server, family, {
            turns: N, offset: c, key: named ? `conv-${c}` : undefined,
            system: `Conversation ${c} has its own system prompt, long enough to be cached.`,
          }));
        }
        const transcripts = await Promise.all(runs);
        const s = await server.warmupsSettled();
        for (const t of transcripts) assert.ok(t[N - 1].cached_tokens > 0);
        assert.ok(s.snapshot.entries <= K * ORIGINS, `${s.snapshot.entries} entries`);
        assert.ok(s.snapshot.supersedes >= K * (N - 1), `${s.snapshot.supersedes} supersedes`);
        assert.equal(s.snapshot.evictions.lru, 0);
        assert.equal(s.snapshot.self_evictions, 0);
        // Every follow-up turn took the state its warm-up left (no snapshot copy on the way to
        // its first token).
        assert.ok(s.restores.in_place >= K * (N - 1), JSON.stringify(s.restores));
      });
    });
  }
}
