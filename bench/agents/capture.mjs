// Records a coding agent's session as the requests it sends: the agent (tests/agents) runs
// `--turns` turns of one session, then the first turn of a second session, against `recur serve` on
// a small generated checkpoint (the requests depend on the agent, not on the model), through the
// recording proxy of the end-to-end tests. Writes one JSON line per chat request:
// {"session": 1|2, "turn": N, "path": "/v1/responses", "body": {...}}.
//   node bench/agents/capture.mjs --agent codex --turns 10 --out build/bench-agents/codex.jsonl
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeModel, startServer, tempDir } from '../../tests/e2e/harness.mjs';
import { recordingProxy, agentSession } from '../../tests/e2e/agents.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({ options: {
  agent: { type: 'string', default: 'codex' },
  turns: { type: 'string', default: '10' },
  family: { type: 'string', default: 'qwen3_5' },
  out: { type: 'string', default: join(here, '../../build/bench-agents/session.jsonl') },
} });

// What a developer might type over a session: a task, then follow-ups.
const PROMPTS = [
  'Read the README and tell me how to build this project.', 'Which tests are the slowest?',
  'Add a flag --verbose to the CLI.', 'Now write a unit test for it.', 'Run the tests.',
  'The second test fails; fix it.', 'Update the docs for the new flag.',
  'Summarise what we changed.', 'Write a commit message.', 'Thanks, that is all for today.',
];

const server = await startServer(makeModel(opt.family, ['--eos-bias', '2']),
                                 ['--chat-template-kwargs', '{"enable_thinking": false}']);
const proxy = await recordingProxy(server);
const ctx = { base: proxy.base, model: opt.family, home: tempDir('capture-home') };
const lines = [];
const record = async (session, turn, run) => {
  const before = proxy.exchanges.length;
  const r = await run();
  if (r.code !== 0) throw new Error(`${opt.agent} exited ${r.code}:\n${r.out.slice(-2000)}`);
  for (const e of proxy.exchanges.slice(before)) {
    if (e.method === 'POST' && e.body && /(chat\/completions|responses|messages)/.test(e.path)) {
      lines.push(JSON.stringify({ session, turn, path: e.path.replace(/\?.*$/, ''), body: e.body }));
    }
  }
  await server.warmupsSettled();
};
const run = agentSession(opt.agent, ctx);
const turns = Number(opt.turns);
for (let t = 0; t < turns; t++) {
  await record(1, t + 1, () => run(PROMPTS[t % PROMPTS.length], t > 0));
}
await record(2, 1, () => agentSession(opt.agent, { ...ctx, project: run.project })('Say hello.', false));
await proxy.close();
await server.stop();
mkdirSync(dirname(opt.out), { recursive: true });
writeFileSync(opt.out, lines.join('\n') + '\n');
console.log(`${lines.length} requests of ${opt.agent} (${turns} turns + a second session) -> ${opt.out}`);
