// Turn latency benchmark (docs/performance.md "Turn latency"): what a user of a chat assistant
// waits for, measured through the official OpenAI SDK with streaming, against where the server
// says the time went (each response's x_recur_timing). Three scenarios:
//   one          one conversation, --turns turns after a --system-tokens system prompt: per turn
//                the client's TTFT, the uncached tokens, the server's phases, and TTFT against the
//                engine alone (`recur bench` prefilling the same uncached tokens after the cached
//                prefix, timed in the same run);
//   shared       --conversations new conversations that share one system prompt (all at once, or
//                with --shared-start first one first, the others together): the prompt tokens
//                each computed, against the shared prompt +
//                the conversations' own tokens;
//   interleaved  --conversations conversations x --turns turns at once (server defaults unless
//                --parallel): median and p90 TTFT of turns 2+.
//
//   node bench/multiturn/turn_latency.mjs --model DIR [--scenarios one,shared,interleaved]
//        [--turns 6] [--conversations 8] [--system-tokens 1570] [--user-tokens 30]
//        [--max-tokens 24] [--parallel N] [--shared-start together|first]
//        [--recur build/bin/recur] [--json out.json]
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRecur, text } from './server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../../tests/node/package.json'));
const OpenAI = require('openai').default ?? require('openai');

function parseArgs(argv) {
  const opts = { scenarios: 'one,shared,interleaved', turns: 6, conversations: 8,
                 'system-tokens': 1570, 'user-tokens': 30, 'max-tokens': 24, parallel: '',
                 'shared-start': 'together',
                 recur: join(here, '../../build/bin/recur'), model: '', json: '', extra: '' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in opts)) throw new Error(`unknown option --${k}`);
    opts[k] = argv[i + 1];
  }
  if (!opts.model) throw new Error('--model DIR is required');
  for (const k of ['turns', 'conversations', 'system-tokens', 'user-tokens', 'max-tokens']) {
    opts[k] = Number(opts[k]);
  }
  return opts;
}

async function startServer(opts) {
  const args = ['--ctx-size', '16384'];
  if (opts.parallel) args.push('--parallel', String(opts.parallel));
  if (opts.extra) args.push(...opts.extra.split(' '));
  const { proc, base } = await startRecur(opts.recur, opts.model, args);
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'bench', maxRetries: 0, timeout: 3600_000 });
  return { proc, base, client };
}

// Waits until the server has no warm-up pending (a user reads the answer before typing the next).
async function settle(base) {
  for (let i = 0; i < 600; i++) {
    const s = await (await fetch(`${base}/v1/cache/stats`)).json();
    if (!s.warmup || s.warmup.pending === 0) return;
    await new Promise((res) => setTimeout(res, 20));
  }
}

// One streamed turn: the client's TTFT and the server's account of it.
async function turn(client, messages, opts, key) {
  const t0 = performance.now();
  let first = 0, content = '', usage = null, timing = null;
  const stream = await client.chat.completions.create({
    model: '', messages, max_tokens: opts['max-tokens'], temperature: 0, stream: true,
    stream_options: { include_usage: true }, prompt_cache_key: key,
    chat_template_kwargs: { enable_thinking: false },
    // A token whose text is held back (an unfinished UTF-8 sequence, a possible stop string) or
    // empty still arrives with its logprob: the first token is seen, whatever the weights say.
    logprobs: true,
  });
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    const d = c?.delta;
    if (!first && (d?.content || d?.reasoning_content || c?.logprobs?.content?.length)) {
      first = performance.now();
    }
    content += d?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
    if (chunk.x_recur_timing) timing = chunk.x_recur_timing;
  }
  const end = performance.now();
  return { ttft_ms: (first || end) - t0, content, prompt: usage.prompt_tokens,
           cached: usage.prompt_tokens_details.cached_tokens, timing };
}

function engineOnlyMs(opts, prefix, prompt) {
  // recur bench's prefill row for `prompt` tokens after `prefix` tokens: its tokens/s as ms.
  const out = execFileSync(opts.recur, ['bench', '-m', opts.model, '--bench-prompts', String(prompt),
    '--bench-prefix', String(prefix), '--bench-sequences', '1', '--bench-seconds', '0.2'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 24 });
  for (const line of out.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells[1] === 'prefill' && Number(cells[3]) === prefix && Number(cells[4]) === prompt) {
      return { ms: (1000 * prompt) / Number(cells[5]), row: line };
    }
  }
  return { ms: NaN, row: out };
}

const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
const pct = (v, p) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

async function scenarioOne(opts) {
  const server = await startServer(opts);
  const rows = [];
  try {
    const messages = [{ role: 'system', content: text(opts['system-tokens'], 7) }];
    for (let t = 0; t < opts.turns; t++) {
      messages.push({ role: 'user', content: text(opts['user-tokens'], 100 + t) });
      const r = await turn(server.client, messages, opts, 'one');
      messages.push({ role: 'assistant', content: r.content });
      rows.push({ turn: t + 1, ...r });
      await settle(server.base);
    }
  } finally {
    server.proc.kill('SIGTERM');
  }
  const later = rows.slice(1);
  const uncached = Math.round(median(later.map((r) => r.prompt - r.cached)));
  const prefix = Math.round(median(later.map((r) => r.cached)));
  const engine = engineOnlyMs(opts, prefix, uncached);
  console.log(`\n### one conversation (${opts.turns} turns, system ~${opts['system-tokens']} words)\n`);
  console.log(`engine alone (recur bench, ${uncached} tokens after ${prefix}): ${engine.ms.toFixed(1)} ms\n`);
  console.log('| turn | prompt | uncached | TTFT ms | vs engine | render | tokenize | restore | forward (steps) | snapshot | server ttft |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const t = r.timing ?? {};  // a server without x_recur_timing (an older version)
    console.log(`| ${r.turn} | ${r.prompt} | ${r.prompt - r.cached} | ${r.ttft_ms.toFixed(1)} | ` +
      `${r.turn > 1 ? (r.ttft_ms / engine.ms).toFixed(2) : '-'} | ${t.render_ms} | ${t.tokenize_ms} | ` +
      `${t.restore_ms} | ${t.forward_ms} (${t.prefill_steps}) | ${t.snapshot_ms} | ${t.ttft_ms} |`);
  }
  return { rows, engine };
}

async function scenarioShared(opts) {
  const server = await startServer(opts);
  const system = text(opts['system-tokens'], 11);
  const rows = [];
  try {
    const one = async (c) => {
      const messages = [{ role: 'system', content: system },
                        { role: 'user', content: text(opts['user-tokens'], 500 + c) }];
      const r = await turn(server.client, messages, opts, `shared-${c}`);
      rows.push({ conversation: c, ...r });
    };
    if (opts['shared-start'] === 'first') {
      await one(0);
      await settle(server.base);
      await Promise.all([...Array(opts.conversations - 1).keys()].map((c) => one(c + 1)));
    } else {
      await Promise.all([...Array(opts.conversations).keys()].map((c) => one(c)));
    }
  } finally {
    server.proc.kill('SIGTERM');
  }
  const computedOf = (r) => r.timing?.prefill_tokens ?? r.prompt - r.cached;
  const computed = rows.reduce((a, r) => a + computedOf(r), 0);
  const first = rows.find((r) => r.conversation === 0);
  // The shared prefix (what the conversations that did not compute it restored), and each
  // conversation's own tokens beyond it: the target is one shared prefix plus the own tokens.
  const shared = Math.max(...rows.map((r) => r.cached));
  const own = rows.reduce((a, r) => a + (r.prompt - shared), 0);
  console.log(`\n### ${opts.conversations} new conversations sharing a system prompt of ~${opts['system-tokens']} words\n`);
  console.log('| conversation | prompt | cached | computed | TTFT ms |');
  console.log('|---|---|---|---|---|');
  for (const r of rows.sort((a, b) => a.conversation - b.conversation)) {
    console.log(`| ${r.conversation + 1} | ${r.prompt} | ${r.cached} | ${computedOf(r)} | ${r.ttft_ms.toFixed(0)} |`);
  }
  console.log(`\ncomputed ${computed} prompt tokens in all (start: ${opts['shared-start']}); ` +
    `the shared prefix is ${shared} tokens and the conversations' own tokens ${own}: ` +
    `target ${shared + own}; the first conversation's prompt is ${first.prompt}`);
  return { rows, computed, own, shared };
}

async function scenarioInterleaved(opts) {
  const server = await startServer(opts);
  const rows = [];
  try {
    await Promise.all([...Array(opts.conversations).keys()].map(async (c) => {
      const messages = [{ role: 'system', content: `Conversation ${c}. ${text(opts['system-tokens'], c + 1)}` }];
      for (let t = 0; t < opts.turns; t++) {
        messages.push({ role: 'user', content: text(opts['user-tokens'], 1000 * c + t) });
        const r = await turn(server.client, messages, opts, `c${c}`);
        messages.push({ role: 'assistant', content: r.content });
        rows.push({ conversation: c, turn: t + 1, ...r });
      }
    }));
  } finally {
    server.proc.kill('SIGTERM');
  }
  const later = rows.filter((r) => r.turn > 1);
  const ttft = later.map((r) => r.ttft_ms);
  const queue = later.map((r) => r.timing?.queue_ms ?? NaN);
  console.log(`\n### ${opts.conversations} interleaved conversations x ${opts.turns} turns` +
              `${opts.parallel ? `, --parallel ${opts.parallel}` : ', defaults'}\n`);
  console.log('| turns 2+ | median ms | p90 ms |');
  console.log('|---|---|---|');
  console.log(`| TTFT | ${median(ttft).toFixed(0)} | ${pct(ttft, 0.9).toFixed(0)} |`);
  console.log(`| of it queued | ${median(queue).toFixed(0)} | ${pct(queue, 0.9).toFixed(0)} |`);
  const first = rows.filter((r) => r.turn === 1).map((r) => r.ttft_ms);
  console.log(`| first turns' TTFT | ${median(first).toFixed(0)} | ${pct(first, 0.9).toFixed(0)} |`);
  return { rows };
}

const opts = parseArgs(process.argv.slice(2));
const results = { opts };
for (const s of opts.scenarios.split(',')) {
  if (s === 'one') results.one = await scenarioOne(opts);
  else if (s === 'shared') results.shared = await scenarioShared(opts);
  else if (s === 'interleaved') results.interleaved = await scenarioInterleaved(opts);
  else throw new Error(`unknown scenario ${s}`);
}
if (opts.json) writeFileSync(opts.json, JSON.stringify(results, null, 2));
