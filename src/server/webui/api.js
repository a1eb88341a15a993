// The page's client of recur's OpenAI-compatible API: /v1/models and streaming
// /v1/chat/completions, read as server-sent events, with the timings and cache figures each turn
// shows. URLs are relative, so the page also works behind a reverse proxy under a path prefix.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(apiKey) {
  const h = { 'Content-Type': 'application/json' };
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

async function errorOf(response) {
  let message = `HTTP ${response.status}`;
  try {
    const body = await response.json();
    message = body?.error?.message ?? message;
  } catch { /* not JSON: keep the status */ }
  return new ApiError(response.status, message);
}

export async function fetchModels(apiKey) {
  const r = await fetch('v1/models', { headers: headers(apiKey) });
  if (!r.ok) throw await errorOf(r);
  return (await r.json()).data ?? [];
}

// Splits a text stream into server-sent events: yields {data} for `data:` lines and {comment}
// for comment lines (recur ends a stream with `: x-recur-cache ...`).
async function* sseEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(':')) yield { comment: line.slice(1).trim() };
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) yield { data: data.join('\n') };
    }
  }
}

// Streams one chat turn. `on` receives reasoning(text), content(text) and toolCalls(calls) as
// they arrive. Resolves with {finishReason, usage, cacheTrace, ttftMs, totalMs, tokensPerSecond,
// stopped}; an aborted signal resolves with stopped = true and what arrived until then.
export async function streamChat({ body, apiKey, signal, on }) {
  const start = performance.now();
  let firstAt = null;
  const result = { finishReason: null, usage: null, cacheTrace: null, stopped: false };
  const mark = () => { if (firstAt === null) firstAt = performance.now(); };
  try {
    const r = await fetch('v1/chat/completions', {
      method: 'POST', headers: headers(apiKey), signal,
      body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
    });
    if (!r.ok) throw await errorOf(r);
    for await (const ev of sseEvents(r.body)) {
      if (ev.comment !== undefined) {
        if (ev.comment.startsWith('x-recur-cache ')) result.cacheTrace = ev.comment.slice(14);
        continue;
      }
      if (ev.data === '[DONE]') break;
      const chunk = JSON.parse(ev.data);
      if (chunk.error) throw new ApiError(500, chunk.error.message ?? 'the server failed the turn');
      if (chunk.usage) result.usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const d = choice.delta ?? {};
      if (d.reasoning_content) { mark(); on.reasoning(d.reasoning_content); }
      if (d.content) { mark(); on.content(d.content); }
      if (d.tool_calls?.length) { mark(); on.toolCalls(d.tool_calls); }
      if (choice.finish_reason) result.finishReason = choice.finish_reason;
    }
  } catch (e) {
    if (e.name !== 'AbortError') throw e;
    result.stopped = true;
  }
  const end = performance.now();
  result.totalMs = end - start;
  result.ttftMs = firstAt === null ? null : firstAt - start;
  const generated = result.usage?.completion_tokens ?? 0;
  // Decode speed: the tokens after the first over the time after the first.
  result.tokensPerSecond = firstAt !== null && generated > 1 && end > firstAt
    ? (generated - 1) / ((end - firstAt) / 1000) : null;
  return result;
}
