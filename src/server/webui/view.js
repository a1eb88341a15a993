// Renders messages and the per-turn figures. Text from the model or the user only ever goes in
// through textContent, never as HTML.

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function formatMs(ms) {
  if (ms === null || ms === undefined) return '–';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

// The line under an answer: what the prompt cost and how fast the answer came.
export function statsLine(stats) {
  const line = el('div', 'stats');
  if (!stats) return line;
  const u = stats.usage;
  const parts = [];
  if (u) {
    const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
    const pct = u.prompt_tokens > 0 ? Math.round((100 * cached) / u.prompt_tokens) : 0;
    line.dataset.promptTokens = u.prompt_tokens;
    line.dataset.cachedTokens = cached;
    line.dataset.completionTokens = u.completion_tokens;
    parts.push(['prompt', `${u.prompt_tokens} tokens`]);
    parts.push(['cached', `${cached} (${pct}%)`]);
    parts.push(['computed', `${u.prompt_tokens - cached}`]);
    parts.push(['generated', `${u.completion_tokens}`]);
  }
  parts.push(['TTFT', formatMs(stats.ttftMs)]);
  parts.push(['speed', stats.tokensPerSecond ? `${stats.tokensPerSecond.toFixed(1)} tok/s` : '–']);
  if (stats.stopped) parts.push(['', 'stopped']);
  else if (stats.finishReason && stats.finishReason !== 'stop') parts.push(['finish', stats.finishReason]);
  for (const [name, value] of parts) {
    const item = el('span', 'stat');
    if (name) item.append(el('span', 'stat-name', name + ' '));
    item.append(el('b', `stat-${name.toLowerCase() || 'state'}`, value));
    line.append(item);
  }
  if (stats.cacheTrace) line.title = `x-recur-cache: ${stats.cacheTrace}`;
  return line;
}

function toolCallsBlock(calls) {
  const box = el('div', 'tool-calls');
  for (const c of calls) {
    const call = el('div', 'tool-call');
    call.append(el('span', 'tool-label', 'tool call'), el('code', 'tool-name', c.function?.name ?? '?'));
    let args = c.function?.arguments ?? '';
    try { args = JSON.stringify(JSON.parse(args), null, 2); } catch { /* shown as sent */ }
    call.append(el('pre', 'tool-args', args));
    box.append(call);
  }
  return box;
}

// One message's element, with handles to update it while it streams.
export function messageView(msg) {
  const root = el('div', `msg ${msg.role}`);
  const label = { user: 'You', assistant: 'Assistant', tool: 'Tool result' }[msg.role] ?? msg.role;
  root.append(el('div', 'role', label));
  const reasoning = el('details', 'reasoning');
  const summary = el('summary', '', 'Reasoning');
  const reasoningText = el('div', 'reasoning-text');
  reasoning.append(summary, reasoningText);
  const content = el('div', 'content');
  const tools = el('div', 'tools-slot');
  const stats = el('div', 'stats-slot');
  const error = el('div', 'error');
  root.append(reasoning, content, tools, error, stats);

  const view = {
    root,
    update(m, { streaming = false } = {}) {
      root.dataset.state = streaming ? 'streaming' : 'done';
      reasoning.hidden = !m.reasoning;
      reasoningText.textContent = m.reasoning ?? '';
      summary.textContent = streaming && !m.content ? 'Reasoning…' : 'Reasoning';
      content.textContent = m.content ?? '';
      content.hidden = !m.content && !streaming;
      tools.replaceChildren(...(m.tool_calls?.length ? [toolCallsBlock(m.tool_calls)] : []));
      error.textContent = m.error ?? '';
      error.hidden = !m.error;
      stats.replaceChildren(...(m.stats ? [statsLine(m.stats)] : []));
      if (m.role === 'tool') content.prepend(el('code', 'tool-name', m.tool_name ?? ''), ' ');
    },
  };
  view.update(msg);
  return view;
}
