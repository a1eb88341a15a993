// Multi-turn chat benchmark: many concurrent conversations against recur through the official
// OpenAI SDK, streaming, so each turn's time to first token is measured as a user sees it. Runs
// the same workload with the prompt cache on and off (two servers started here, one after the
// other) and reports, per turn: TTFT on/off and their ratio, the cached fraction of the prompt, and
// decode tokens/s.
//
//   node bench/multiturn/multiturn.mjs --model DIR [--conversations 4] [--turns 6]
//        [--user-tokens 60] [--system-tokens 400] [--max-tokens 32] [--thinking on|off]
//        [--parallel 4] [--recur build/bin/recur] [--json out.json]
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRecur, text } from './server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../../tests/node/package.json'));
const OpenAI = require('openai').default ?? require('openai');

function parseArgs(argv) {
  const opts = { conversations: 4, turns: 6, 'user-tokens': 60, 'system-tokens': 400,
                 'max-tokens': 32, thinking: 'off', parallel: 4,
                 recur: join(here, '../../build/bin/recur') };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in opts) && k !== 'model' && k !== 'json') throw new Error(`unknown option --${k}`);
    opts[k] = argv[i + 1];
  }
  if (!opts.model) throw new Error('--model DIR is required');
  for (const k of ['conversations', 'turns', 'user-tokens', 'system-tokens', 'max-tokens', 'parallel']) {
    opts[k] = Number(opts[k]);
  }
  return opts;
}

function startServer(opts, cacheOn) {
  const args = ['--parallel', String(opts.parallel), '--ctx-size', '16384'];
  if (!cacheOn) args.push('--no-prompt-cache');
  return startRecur(opts.recur, opts.model, args);
}

async function conversation(client, opts, c, results) {
  const messages = [{ role: 'system', content: `Conversation ${c}. ${text(opts['system-tokens'], c + 1)}` }];
  for (let t = 0; t < opts.turns; t++) {
    messages.push({ role: 'user', content: text(opts['user-tokens'], 1000 * c + t) });
    const t0 = performance.now();
    let first = 0, content = '', reasoning = '', usage = null;
    const stream = await client.chat.completions.create({
      model: '', messages, max_tokens: opts['max-tokens'], temperature: 0, stream: true,
      stream_options: { include_usage: true },
      chat_template_kwargs: { enable_thinking: opts.thinking === 'on' },
    });
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta;
      if (d && (d.content || d.reasoning_content) && !first) first = performance.now();
      content += d?.content ?? '';
      reasoning += d?.reasoning_content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    const end = performance.now();
    first ||= end;
    const gen = usage.completion_tokens;
    results.push({ turn: t + 1, ttft_ms: first - t0, prompt: usage.prompt_tokens,
                   cached: usage.prompt_tokens_details.cached_tokens,
                   // Tokens after the first over the time after the first (no value when the
                   // whole answer arrived in one piece).
                   decode_tps: gen > 1 && end - first > 0.5 ? (gen - 1) / ((end - first) / 1000) : NaN });
    const reply = { role: 'assistant', content };
    if (reasoning) reply.reasoning_content = reasoning;
    messages.push(reply);
  }
}

async function run(opts, cacheOn) {
  const server = await startServer(opts, cacheOn);
  const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'bench', maxRetries: 0,
                              timeout: 3600_000 });
  const results = [];
  try {
    await Promise.all([...Array(opts.conversations).keys()].map((c) => conversation(client, opts, c, results)));
  } finally {
    server.proc.kill('SIGTERM');
  }
  return results;
}

function perTurn(results, turns) {
  const out = [];
  for (let t = 1; t <= turns; t++) {
    const r = results.filter((x) => x.turn === t);
    const mean = (f) => {
      const v = r.map(f).filter((x) => Number.isFinite(x));
      return v.length ? v.reduce((a, x) => a + x, 0) / v.length : NaN;
    };
    out.push({ turn: t, ttft_ms: mean((x) => x.ttft_ms), prompt: mean((x) => x.prompt),
               cached_fraction: mean((x) => x.cached / x.prompt), decode_tps: mean((x) => x.decode_tps) });
  }
  return out;
}

const opts = parseArgs(process.argv.slice(2));
const on = perTurn(await run(opts, true), opts.turns);
const off = perTurn(await run(opts, false), opts.turns);
console.log(`model ${opts.model}: ${opts.conversations} conversations x ${opts.turns} turns, ` +
            `system ~${opts['system-tokens']} / user ~${opts['user-tokens']} words, ` +
            `max_tokens ${opts['max-tokens']}, thinking ${opts.thinking}, parallel ${opts.parallel}`);
console.log('\n| turn | prompt tokens | cached (on) | TTFT on ms | TTFT off ms | off/on | decode tok/s on | decode tok/s off |');
console.log('|---|---|---|---|---|---|---|---|');
for (let i = 0; i < opts.turns; i++) {
  const a = on[i], b = off[i];
  console.log(`| ${a.turn} | ${a.prompt.toFixed(0)} | ${(100 * a.cached_fraction).toFixed(1)}% | ` +
              `${a.ttft_ms.toFixed(0)} | ${b.ttft_ms.toFixed(0)} | ${(b.ttft_ms / a.ttft_ms).toFixed(2)} | ` +
              `${a.decode_tps.toFixed(1)} | ${b.decode_tps.toFixed(1)} |`);
}
if (opts.json) writeFileSync(opts.json, JSON.stringify({ opts, on, off }, null, 2));
