// What the page keeps in the browser's localStorage: conversations, settings and the API key.
// Nothing is kept on the server; clearing the site's data clears it all.

const KEY_CONVERSATIONS = 'recur.conversations';
const KEY_SETTINGS = 'recur.settings';
const KEY_API_KEY = 'recur.apiKey';
const KEY_CURRENT = 'recur.current';

export const DEFAULT_SETTINGS = Object.freeze({
  systemPrompt: '',
  temperature: 0.7,
  top_p: 0.95,
  top_k: 40,
  min_p: 0,
  max_tokens: null,
  seed: null,
  enable_thinking: true,
  tools: '',
});

function read(key, fallback) {
  try {
    const text = localStorage.getItem(key);
    return text === null ? fallback : JSON.parse(text);
  } catch {
    return fallback;  // unreadable (hand-edited, another version): start over
  }
}

function write(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
    return true;
  } catch {
    return false;  // quota exceeded: the page keeps working, this state is not kept
  }
}

// A random id from crypto.getRandomValues, which (unlike randomUUID) also exists on plain http
// pages served from a LAN address.
export function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return 'c' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export function loadSettings() {
  return { ...DEFAULT_SETTINGS, ...read(KEY_SETTINGS, {}) };
}

export function saveSettings(settings) { write(KEY_SETTINGS, settings); }

export function loadApiKey() { return localStorage.getItem(KEY_API_KEY) ?? ''; }

export function saveApiKey(key) {
  if (key) localStorage.setItem(KEY_API_KEY, key);
  else localStorage.removeItem(KEY_API_KEY);
}

// Conversations, newest first: {id, title, created, messages: [...]}. A message is
// {role, content, reasoning?, tool_calls?, tool_call_id?, stats?, error?}.
export class ConversationStore {
  constructor() {
    const list = read(KEY_CONVERSATIONS, []);
    this.list = Array.isArray(list) ? list.filter((c) => c && c.id && Array.isArray(c.messages)) : [];
    this.currentId = read(KEY_CURRENT, null);
    if (!this.get(this.currentId)) this.currentId = this.list[0]?.id ?? null;
  }

  get(id) { return this.list.find((c) => c.id === id) ?? null; }
  current() { return this.get(this.currentId); }

  create() {
    const c = { id: newId(), title: 'New chat', created: Date.now(), messages: [] };
    this.list.unshift(c);
    this.select(c.id);
    return c;
  }

  select(id) {
    this.currentId = id;
    write(KEY_CURRENT, id);
  }

  remove(id) {
    this.list = this.list.filter((c) => c.id !== id);
    if (this.currentId === id) this.select(this.list[0]?.id ?? null);
    this.save();
  }

  save() {
    if (write(KEY_CONVERSATIONS, this.list)) return;
    // Out of quota: drop the oldest conversations (never the current one) until it fits.
    while (this.list.length > 1) {
      const victim = this.list.findLast((c) => c.id !== this.currentId);
      if (!victim) break;
      this.list = this.list.filter((c) => c !== victim);
      if (write(KEY_CONVERSATIONS, this.list)) return;
    }
  }
}
