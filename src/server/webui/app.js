// The chat page: conversations in the sidebar, the current one in the middle, settings on the
// right. Each conversation is its own prompt-cache session (prompt_cache_key = its id), so every
// follow-up turn reuses the state of the turns before it.
import { ApiError, fetchModels, streamChat } from './api.js';
import {
  ConversationStore, DEFAULT_SETTINGS, loadApiKey, loadSettings, saveApiKey, saveSettings,
} from './store.js';
import { messageView } from './view.js';

const $ = (id) => document.getElementById(id);
const store = new ConversationStore();
let settings = loadSettings();
let apiKey = loadApiKey();
let modelId = '';
let running = null;  // {controller} while a turn streams

const NUMERIC = ['temperature', 'top_p', 'top_k', 'min_p', 'max_tokens', 'seed'];

function setStatus(text, isError = false) {
  $('status').textContent = text;
  $('status').classList.toggle('error', isError);
}

// ---- settings panel

function showSettings() {
  $('system-prompt').value = settings.systemPrompt;
  for (const name of NUMERIC) $(name).value = settings[name] ?? '';
  $('enable_thinking').checked = settings.enable_thinking;
  $('tools').value = settings.tools;
  $('api-key').value = apiKey;
}

function readSettings() {
  const next = { ...settings, systemPrompt: $('system-prompt').value, tools: $('tools').value };
  for (const name of NUMERIC) {
    const text = $(name).value.trim();
    next[name] = text === '' ? null : Number(text);
  }
  next.enable_thinking = $('enable_thinking').checked;
  settings = next;
  saveSettings(settings);
  toolsFromSettings();  // shows a JSON error at once
  if ($('api-key').value !== apiKey) {
    apiKey = $('api-key').value;
    saveApiKey(apiKey);
    connect();
  }
}

// The tools setting as an array, or null; a malformed one is reported under the field.
function toolsFromSettings() {
  const text = settings.tools.trim();
  const err = $('tools-error');
  err.hidden = true;
  if (!text) return null;
  try {
    const tools = JSON.parse(text);
    if (!Array.isArray(tools)) throw new Error('not an array');
    return tools.length ? tools : null;
  } catch (e) {
    err.textContent = `Tools are not a JSON array (${e.message}); sent without tools.`;
    err.hidden = false;
    return null;
  }
}

function toggleSettings(open) {
  $('settings').hidden = !open;
  $('settings-toggle').setAttribute('aria-expanded', String(open));
  if (open) showSettings();
}

// ---- API key and model

function askForKey(message) {
  $('key-error').textContent = message ?? '';
  $('key-error').hidden = !message;
  $('key-input').value = apiKey;
  if (!$('key-dialog').open) $('key-dialog').showModal();
  $('key-input').focus();
}

async function connect() {
  try {
    const models = await fetchModels(apiKey);
    modelId = models[0]?.id ?? '';
    $('model-name').textContent = modelId || '(no model)';
    $('server-info').textContent = modelId ? `serving ${modelId}` : '';
    setStatus('');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      $('model-name').textContent = 'API key needed';
      askForKey(apiKey ? 'The server refused this key.' : '');
    } else if (e instanceof ApiError && e.status === 503) {
      setStatus('the server is loading the model…');
      setTimeout(connect, 1000);
    } else {
      setStatus(`cannot reach the server: ${e.message}`, true);
      setTimeout(connect, 3000);
    }
  }
}

// ---- conversations

function renderSidebar() {
  const list = $('conversations');
  list.replaceChildren();
  for (const c of store.list) {
    const item = document.createElement('li');
    item.className = c.id === store.currentId ? 'active' : '';
    item.dataset.id = c.id;
    const title = document.createElement('button');
    title.type = 'button';
    title.className = 'title';
    title.textContent = c.title;
    title.addEventListener('click', () => { if (!running) { store.select(c.id); render(); } });
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'delete';
    del.title = 'Delete this conversation';
    del.textContent = '×';
    del.addEventListener('click', () => {
      if (running && c.id === store.currentId) return;
      store.remove(c.id);
      render();
    });
    item.append(title, del);
    list.append(item);
  }
}

function renderMessages() {
  const box = $('messages');
  const conv = store.current();
  box.replaceChildren();
  if (!conv || conv.messages.length === 0) {
    box.append(emptyNote);
  } else {
    for (const m of conv.messages) box.append(messageView(m).root);
  }
  box.scrollTop = box.scrollHeight;
  updateToolReply();
}

function render() {
  renderSidebar();
  renderMessages();
}

// The tool call of the last assistant turn that still waits for its result, if any.
function pendingToolCall(conv) {
  if (!conv) return null;
  let i = conv.messages.length - 1;
  const answered = new Set();
  while (i >= 0 && conv.messages[i].role === 'tool') answered.add(conv.messages[i--].tool_call_id);
  const last = conv.messages[i];
  if (!last || last.role !== 'assistant' || !last.tool_calls?.length) return null;
  return last.tool_calls.find((c) => !answered.has(c.id)) ?? null;
}

function updateToolReply() {
  const call = pendingToolCall(store.current());
  $('tool-reply').hidden = !call;
  $('as-tool-result').checked = Boolean(call);
  $('tool-reply-name').textContent = call ? `${call.function?.name}()` : '';
}

// The request's messages: the system prompt, then the conversation as the API expects it.
function apiMessages(conv) {
  const out = [];
  if (settings.systemPrompt.trim()) out.push({ role: 'system', content: settings.systemPrompt });
  for (const m of conv.messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    if (m.role === 'tool') out.push({ role: 'tool', tool_call_id: m.tool_call_id, content: m.content });
    if (m.role !== 'assistant' || (m.error && !m.content && !m.tool_calls)) continue;
    const a = { role: 'assistant', content: m.content ?? '' };
    if (m.reasoning) a.reasoning_content = m.reasoning;
    if (m.tool_calls?.length) a.tool_calls = m.tool_calls;
    out.push(a);
  }
  return out;
}

function requestBody(conv) {
  const body = { model: modelId, messages: apiMessages(conv), prompt_cache_key: conv.id };
  for (const name of NUMERIC) if (settings[name] !== null && settings[name] !== undefined) body[name] = settings[name];
  body.chat_template_kwargs = { enable_thinking: settings.enable_thinking };
  const tools = toolsFromSettings();
  if (tools) body.tools = tools;
  return body;
}

function setRunning(controller) {
  running = controller ? { controller } : null;
  $('send').hidden = Boolean(controller);
  $('stop').hidden = !controller;
  $('input').disabled = false;
}

async function send() {
  const text = $('input').value;
  if (running || !text.trim()) return;
  const conv = store.current() ?? store.create();
  const call = $('as-tool-result').checked ? pendingToolCall(conv) : null;
  if (call) {
    conv.messages.push({ role: 'tool', tool_call_id: call.id, tool_name: call.function?.name, content: text });
  } else {
    conv.messages.push({ role: 'user', content: text });
    if (conv.title === 'New chat') conv.title = text.trim().slice(0, 48);
  }
  $('input').value = '';
  const body = requestBody(conv);  // before the reply is added: it is not part of the prompt
  const reply = { role: 'assistant', content: '', reasoning: '' };
  conv.messages.push(reply);
  store.save();
  render();
  const view = messageView(reply);
  $('messages').lastElementChild.replaceWith(view.root);
  view.update(reply, { streaming: true });

  const controller = new AbortController();
  setRunning(controller);
  const box = $('messages');
  const follow = () => {
    if (box.scrollHeight - box.scrollTop - box.clientHeight < 80) box.scrollTop = box.scrollHeight;
  };
  try {
    const result = await streamChat({
      body, apiKey, signal: controller.signal,
      on: {
        reasoning: (t) => { reply.reasoning += t; view.update(reply, { streaming: true }); follow(); },
        content: (t) => { reply.content += t; view.update(reply, { streaming: true }); follow(); },
        toolCalls: (calls) => { reply.tool_calls = [...(reply.tool_calls ?? []), ...calls]; },
      },
    });
    reply.stats = result;
  } catch (e) {
    reply.error = e.message;
    if (e instanceof ApiError && e.status === 401) askForKey('The server asks for an API key.');
  } finally {
    setRunning(null);
    if (!reply.reasoning) delete reply.reasoning;
    store.save();
    view.update(reply);
    follow();
    renderSidebar();
    updateToolReply();
    $('input').focus();
  }
}

// ---- wiring

const emptyNote = $('empty');

$('composer').addEventListener('submit', (e) => { e.preventDefault(); send(); });
$('input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
});
$('stop').addEventListener('click', () => running?.controller.abort());
$('new-chat').addEventListener('click', () => {
  if (running) return;
  const cur = store.current();
  if (!cur || cur.messages.length) store.create();
  render();
  $('input').focus();
});
$('settings-toggle').addEventListener('click', () => toggleSettings($('settings').hidden));
$('settings-close').addEventListener('click', () => toggleSettings(false));
$('settings-reset').addEventListener('click', () => {
  settings = { ...DEFAULT_SETTINGS };
  saveSettings(settings);
  showSettings();
});
for (const id of ['system-prompt', 'tools', 'api-key', 'enable_thinking', ...NUMERIC]) {
  $(id).addEventListener('change', readSettings);
}
$('key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  apiKey = $('key-input').value.trim();
  saveApiKey(apiKey);
  $('key-dialog').close();
  connect();
});

if (!store.current()) store.create();
render();
connect();
$('input').focus();
