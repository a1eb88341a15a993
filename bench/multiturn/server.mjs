// What the chat benchmarks share: repeatable filler text and a `recur serve` started on a free
// loopback port, ready once /health answers.
import { spawn } from 'node:child_process';

// Words of ~1 token each in most BPE vocabularies: lengths are approximate but repeatable.
const WORDS = ('the of and to in is that for it as with was on be by at this from or an are ' +
  'not have but they which one you were all we when there can more if no out so what up said ' +
  'about into than them some could time these two may then first any my now such like our over').split(' ');
export function text(n, seed) {
  let s = '', x = seed;
  for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; s += WORDS[x % WORDS.length] + ' '; }
  return s.trim();
}

// Starts `recur serve -m model` with `args`; resolves to { proc, base } once it is healthy.
export async function startRecur(recur, model, args) {
  const proc = spawn(recur, ['serve', '-m', model, '--port', '0', ...args],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (c) => {
      log += c;
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`recur exited ${code}\n${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r?.status === 200) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return { proc, base };
}
