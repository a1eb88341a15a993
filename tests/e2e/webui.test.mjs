// The chat page in a real browser: Debian's chromium, headless, driven by puppeteer-core, against
// the real `recur serve` and a generated checkpoint. A three-turn chat shows how much of each
// prompt came from the cache; stop, reasoning, tool calls, the API key and --no-webui are checked
// as a user meets them. RECUR_WEBUI_SCREENSHOT=FILE keeps a screenshot of the chat (for docs).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { makeModel, startServer, tempDir } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../node/package.json'));
const puppeteer = require('puppeteer-core');

const CHROMIUM = process.env.RECUR_CHROMIUM ??
  ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome']
    .find((p) => existsSync(p));

let browser = null;
let launchError = null;
// One browser for the file; a test skips (saying why) only when chromium cannot start at all, and
// outside CI.
async function openPage(t) {
  if (!browser && !launchError) {
    if (!CHROMIUM) {
      launchError = 'no chromium (scripts/setup.sh installs Debian\'s chromium; RECUR_CHROMIUM=PATH names another)';
    } else {
      try {
        browser = await puppeteer.launch({
          executablePath: CHROMIUM, headless: true, timeout: 60000,
          // --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
          args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
                 `--user-data-dir=${tempDir('chromium')}`],
        });
      } catch (e) {
        launchError = `chromium (${CHROMIUM}) cannot start: ${e.message.split('\n')[0]}`;
      }
    }
  }
  if (launchError) {
    // CI (.ci/run) sets RECUR_REQUIRE_CHROMIUM=1: there a missing browser fails instead of
    // passing the page untested.
    if (process.env.RECUR_REQUIRE_CHROMIUM === '1') throw new Error(launchError);
    t.skip(launchError);
    return null;
  }
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.scriptErrors = errors;
  return page;
}

after(async () => { await browser?.close(); });

const text = (page, sel) => page.$eval(sel, (e) => e.textContent);

async function setField(page, id, value) {
  await page.$eval(`#${id}`, (e, v) => {
    if (e.type === 'checkbox') e.checked = v; else e.value = v;
    e.dispatchEvent(new Event('change'));
  }, value);
}

// Greedy and short, so each turn takes a moment on a tiny model.
async function configure(page, { maxTokens = 12, thinking = true } = {}) {
  await page.click('#settings-toggle');
  await setField(page, 'temperature', '0');
  await setField(page, 'max_tokens', String(maxTokens));
  await setField(page, 'enable_thinking', thinking);
  await page.click('#settings-close');
}

// Sends one message and waits until its answer is done; returns the answer's figures.
async function say(page, message) {
  const before = await page.$$eval('.msg.assistant[data-state="done"]', (l) => l.length);
  await page.type('#input', message);
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) =>
    document.querySelectorAll('.msg.assistant[data-state="done"]').length > n &&
    !document.querySelector('.msg.assistant[data-state="streaming"]'), { timeout: 60000 }, before);
  return lastAnswer(page);
}

function lastAnswer(page) {
  return page.$eval('.msg.assistant:last-of-type', (m) => {
    const s = m.querySelector('.stats');
    return {
      error: m.querySelector('.error').textContent,
      content: m.querySelector('.content').textContent,
      reasoningShown: !m.querySelector('.reasoning').hidden,
      reasoningOpen: m.querySelector('.reasoning').open,
      prompt: Number(s?.dataset.promptTokens), cached: Number(s?.dataset.cachedTokens),
      generated: Number(s?.dataset.completionTokens),
      cachedText: s?.querySelector('.stat-cached')?.textContent ?? '',
      ttftText: s?.querySelector('.stat-ttft')?.textContent ?? '',
      speedText: s?.querySelector('.stat-speed')?.textContent ?? '',
      stateText: s?.querySelector('.stat-state')?.textContent ?? '',
    };
  });
}

test('a three-turn chat in the browser shows each turn\'s prompt served from the cache', async (t) => {
  const page = await openPage(t);
  if (!page) return;
  const server = await startServer(makeModel('qwen3_5'));
  try {
    const response = await page.goto(`${server.base}/`);
    assert.equal(response.headers()['content-type'], 'text/html; charset=utf-8');
    await page.waitForFunction(() => document.querySelector('#model-name').textContent === 'qwen3_5');
    await configure(page, { maxTokens: 24, thinking: false });
    const turns = [];
    for (const message of ['Hello! Who are you?', 'Tell me about prompt caches.', 'Thanks, bye.']) {
      const a = await say(page, message);
      assert.equal(a.error, '', `turn ${turns.length + 1}`);
      assert.ok(a.prompt > 0 && a.generated > 0, JSON.stringify(a));
      // What the page shows is what the data says: "N (P%)".
      assert.equal(a.cachedText, `${a.cached} (${Math.round((100 * a.cached) / a.prompt)}%)`);
      assert.match(a.ttftText, /^\d+(\.\d+)? m?s$/);
      assert.match(a.speedText, /^(\d+\.\d tok\/s|–)$/);
      turns.push(a);
      await server.warmupsSettled();  // the next turn then finds the anticipated prefix stored
    }
    assert.equal(turns[0].cached, 0);
    for (let i = 1; i < turns.length; i++) {
      // The whole conversation before this turn came from the cache; only the new message and
      // the generation prompt were computed.
      assert.ok(turns[i].cached >= turns[i - 1].prompt, JSON.stringify(turns));
      assert.ok(turns[i].prompt - turns[i].cached <= 32, JSON.stringify(turns));
    }
    assert.ok(turns.every((a) => a.content.length > 0 && !a.reasoningShown), JSON.stringify(turns));
    if (process.env.RECUR_WEBUI_SCREENSHOT) {
      await page.screenshot({ path: process.env.RECUR_WEBUI_SCREENSHOT });
    }
    // The conversation and its figures survive a reload (localStorage).
    await page.reload();
    await page.waitForSelector('.msg.assistant .stats');
    assert.equal(await page.$$eval('.msg.assistant', (l) => l.length), 3);
    assert.equal((await lastAnswer(page)).cached, turns[2].cached);
    assert.deepEqual(page.scriptErrors, []);
  } finally {
    await page.close();
    await server.stop();
  }
});

test('the system prompt and sampling settings go into every request; a new chat starts from the cached system prompt', async (t) => {
  const page = await openPage(t);
  if (!page) return;
  const server = await startServer(makeModel('qwen3_5'));
  const sent = [];
  page.on('request', (r) => {
    if (r.url().endsWith('/v1/chat/completions')) sent.push(JSON.parse(r.postData()));
  });
  try {
    await page.goto(`${server.base}/`);
    await page.waitForFunction(() => document.querySelector('#model-name').textContent === 'qwen3_5');
    await page.click('#settings-toggle');
    await setField(page, 'system-prompt', 'You are a helpful pirate. Answer in one sentence.');
    await setField(page, 'top_p', '0.9');
    await setField(page, 'top_k', '20');
    await setField(page, 'min_p', '0.05');
    await setField(page, 'seed', '7');
    await page.click('#settings-close');
    await configure(page, { maxTokens: 6, thinking: false });
    const first = await say(page, 'Hello!');
    await server.warmupsSettled();
    await page.click('#new-chat');
    const second = await say(page, 'Good morning!');
    assert.equal(first.error, '');
    assert.equal(second.error, '');
    assert.equal(await page.$$eval('#conversations li', (l) => l.length), 2);
    assert.equal(sent.length, 2);
    for (const body of sent) {
      assert.deepEqual(body.messages[0],
                       { role: 'system', content: 'You are a helpful pirate. Answer in one sentence.' });
      assert.equal(body.messages.length, 2);
      assert.equal(body.stream, true);
      assert.deepEqual([body.temperature, body.top_p, body.top_k, body.min_p, body.seed, body.max_tokens],
                       [0, 0.9, 20, 0.05, 7, 6]);
      assert.deepEqual(body.chat_template_kwargs, { enable_thinking: false });
    }
    // Each chat is its own cache session; the second one starts from the tenant's shared system
    // prompt, which the first computed: the page shows it as cached.
    assert.notEqual(sent[0].prompt_cache_key, sent[1].prompt_cache_key);
    assert.equal(first.cached, 0);
    assert.ok(second.cached > 0 && second.cached < second.prompt, JSON.stringify(second));
    assert.deepEqual(page.scriptErrors, []);
  } finally {
    await page.close();
    await server.stop();
  }
});

test('stop ends a long answer: the partial text stays and the server frees the sequence', async (t) => {
  const page = await openPage(t);
  if (!page) return;
  // The tiny model writes 8000 tokens in about 2 s: a long context keeps the answer streaming
  // well past the moment the test presses stop, however slow the browser is. Whether greedy
  // decoding meets the end-of-turn token depends on the CPU's kernels, so the page's request
  // gets ignore_eos on its way out (the page itself has no such setting).
  const server = await startServer(makeModel('qwen3_5'), ['--ctx-size', '200000']);
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    if (req.method() !== 'POST' || !req.url().endsWith('/v1/chat/completions')) {
      req.continue();
      return;
    }
    req.continue({ postData: JSON.stringify({ ...JSON.parse(req.postData()), ignore_eos: true }) });
  });
  try {
    await page.goto(`${server.base}/`);
    await page.waitForFunction(() => document.querySelector('#model-name').textContent === 'qwen3_5');
    await configure(page, { maxTokens: 190000 });
    await page.type('#input', 'Write a very long story.');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => {
      const m = document.querySelector('.msg.assistant[data-state="streaming"]');
      return m && (m.querySelector('.content').textContent.length > 0 ||
                   m.querySelector('.reasoning-text').textContent.length > 0);
    }, { timeout: 60000 });
    assert.equal(await page.$eval('#stop', (b) => b.hidden), false);
    await page.click('#stop');
    await page.waitForSelector('.msg.assistant[data-state="done"]');
    const a = await lastAnswer(page);
    assert.equal(a.stateText, 'stopped');
    // The template opens <think>: the reasoning is shown, collapsed, and opens on a click.
    assert.ok(a.reasoningShown && !a.reasoningOpen, JSON.stringify(a));
    await page.click('.msg.assistant:last-of-type .reasoning summary');
    assert.equal(await page.$eval('.msg.assistant:last-of-type .reasoning', (d) => d.open), true);
    assert.equal(a.error, '');
    assert.equal(await page.$eval('#send', (b) => b.hidden), false);
    assert.ok(a.generated < 190000 || Number.isNaN(a.generated), JSON.stringify(a));
    // The server noticed the client leaving and freed the sequence.
    let active = -1;
    for (let i = 0; i < 100 && active !== 0; i++) {
      const m = await (await fetch(`${server.base}/metrics`)).text();
      active = Number(m.match(/^recur_active_sequences(?:\{[^}]*\})? (\d+)/m)?.[1] ?? -1);
      if (active !== 0) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(active, 0);
    // The conversation goes on after a stop.
    await configure(page, { maxTokens: 8 });
    const next = await say(page, 'Shorter, please.');
    assert.equal(next.error, '');
    assert.ok(next.generated > 0);
  } finally {
    await page.close();
    await server.stop();
  }
});

test('a tool call is shown and the next message can answer it as the tool\'s result', async (t) => {
  const page = await openPage(t);
  if (!page) return;
  const server = await startServer(makeModel('qwen3'));
  try {
    await page.goto(`${server.base}/`);
    // A conversation whose last answer called a tool, as the page stores one it received.
    await page.evaluate(() => {
      localStorage.setItem('recur.conversations', JSON.stringify([{
        id: 'ctools', title: 'weather', created: Date.now(), messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        ],
      }]));
      localStorage.setItem('recur.current', '"ctools"');
    });
    await page.reload();
    await page.waitForFunction(() => document.querySelector('#model-name').textContent === 'qwen3');
    assert.equal(await text(page, '.tool-call .tool-name'), 'get_weather');
    assert.match(await text(page, '.tool-call .tool-args'), /"city": "Paris"/);
    assert.equal(await page.$eval('#tool-reply', (e) => e.hidden), false);
    assert.equal(await text(page, '#tool-reply-name'), 'get_weather()');
    await configure(page, { maxTokens: 6, thinking: false });
    const a = await say(page, '{"temperature_c": 21}');
    assert.equal(a.error, '');
    assert.equal(await page.$$eval('.msg.tool', (l) => l.length), 1);
    assert.equal(await page.$eval('#tool-reply', (e) => e.hidden), true);
  } finally {
    await page.close();
    await server.stop();
  }
});

test('with --api-key the page asks for the key and sends it', async (t) => {
  const page = await openPage(t);
  if (!page) return;
  const server = await startServer(makeModel('qwen3'), ['--api-key', 'sk-web']);
  try {
    const response = await page.goto(`${server.base}/`);
    assert.equal(response.status(), 200);  // the page itself needs no key
    await page.waitForFunction(() => document.querySelector('#key-dialog').open);
    await page.type('#key-input', 'sk-wrong');
    await page.click('#key-save');
    await page.waitForFunction(() => document.querySelector('#key-dialog').open &&
                                     !document.querySelector('#key-error').hidden);
    await page.$eval('#key-input', (e) => { e.value = ''; });
    await page.type('#key-input', 'sk-web');
    await page.click('#key-save');
    await page.waitForFunction(() => document.querySelector('#model-name').textContent === 'qwen3');
    await configure(page, { maxTokens: 4, thinking: false });
    const a = await say(page, 'Hi');
    assert.equal(a.error, '');
    assert.ok(a.generated > 0);
  } finally {
    await page.close();
    await server.stop();
  }
});

test('--no-webui and RECUR_WEBUI=0 leave only the API', async () => {
  for (const [args, env] of [[['--no-webui'], {}], [[], { RECUR_WEBUI: '0' }]]) {
    const server = await startServer(makeModel('qwen3'), args, env);
    try {
      for (const path of ['/', '/webui/app.js']) {
        const r = await fetch(`${server.base}${path}`);
        assert.equal(r.status, 404, path);
        assert.equal((await r.json()).error.type, 'not_found_error');
      }
      assert.equal((await server.json('/v1/models')).status, 200);
    } finally {
      await server.stop();
    }
  }
  // On by default: the page, its scripts as JavaScript, revalidation with the ETag.
  const server = await startServer(makeModel('qwen3'));
  try {
    const js = await fetch(`${server.base}/webui/app.js`);
    assert.equal(js.status, 200);
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
    const again = await fetch(`${server.base}/webui/app.js`,
                              { headers: { 'If-None-Match': js.headers.get('etag') } });
    assert.equal(again.status, 304);
  } finally {
    await server.stop();
  }
});
