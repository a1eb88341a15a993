// /metrics after real traffic passes `promtool check metrics` and counts what happened.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { makeModel, startServer, RECUR } from './harness.mjs';
import { converse } from './conversation.mjs';

const PROMTOOL = process.env.PROMTOOL ?? join(dirname(RECUR), '../tools/promtool');

let server;
before(async () => { server = await startServer(makeModel('qwen3_5')); });
after(async () => { await server?.stop(); });

test('metrics are valid Prometheus text and count tokens, requests and cache activity', async () => {
  await converse(server, 'qwen3_5', { turns: 3 });
  const text = await (await fetch(`${server.base}/metrics`)).text();
  assert.ok(existsSync(PROMTOOL), `promtool not found at ${PROMTOOL} (scripts/setup.sh extracts it)`);
  const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(check.status, 0, `promtool: ${check.stdout}${check.stderr}`);
  const value = (re) => Number(text.match(re)?.[1]);
  assert.equal(value(/^recur_http_requests_total\{code="200",route="\/v1\/chat\/completions"\} (\S+)$/m), 3);
  assert.ok(value(/^recur_cached_prompt_tokens_total (\S+)$/m) > 0);
  assert.ok(value(/^recur_generated_tokens_total (\S+)$/m) > 0);
  assert.ok(value(/^recur_time_to_first_token_seconds_count (\S+)$/m) === 3);
  assert.ok(value(/^recur_cache_hits_total\{store="snapshot"\} (\S+)$/m) >= 2);
  assert.ok(value(/^recur_cache_supersedes_total\{store="snapshot"\} (\S+)$/m) >= 1);
  assert.equal(value(/^recur_active_sequences (\S+)$/m), 0);
  // Engine and HTTP pool gauges: the scrape itself occupies one worker.
  assert.ok(value(/^recur_engine_steps_total (\S+)$/m) > 0);
  const computed = value(/^recur_computed_tokens_total\{kind="prompt"\} (\S+)$/m);
  const prompt = value(/^recur_prompt_tokens_total (\S+)$/m);
  const cached = value(/^recur_cached_prompt_tokens_total (\S+)$/m);
  assert.equal(computed, prompt - cached, 'every prompt token is either cached or computed');
  assert.ok(value(/^recur_http_workers\{state="busy"\} (\S+)$/m) >= 1);
  assert.ok(value(/^recur_http_workers_max (\S+)$/m) >= 4);
});
