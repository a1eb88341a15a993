#!/usr/bin/env bash
# Part of demo.sh after the build: the demo model (generated once), `recur serve` on it (its log in
# BUILD_DIR/demo-server.log), a scripted multi-turn chat through its OpenAI API, then the server
# keeps serving until Ctrl-C, which stops it and exits 0. RECUR_DEMO_KEEP=0 stops it after the chat.
# Usage: scripts/demo-chat.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/.." && pwd)
recur=$build/bin/recur
model=$build/demo-model
port=${RECUR_PORT:-8080}
keep=${RECUR_DEMO_KEEP:-1}
log=$build/demo-server.log
base_url=http://127.0.0.1:$port/v1

server=""
phase=starting
# shellcheck disable=SC2317  # the traps below run these
stop_server() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  server=""
}
# Ctrl-C while serving is the way to end the demo (exit 0); before that it interrupts it (130).
# shellcheck disable=SC2317
on_interrupt() {
  trap - INT
  stop_server
  if [ "$phase" = serving ]; then
    echo
    echo "demo: stopped the server."
    exit 0
  fi
  echo "demo: interrupted; the server is stopped." >&2
  exit 130
}
trap stop_server EXIT
trap on_interrupt INT
trap 'trap - TERM; stop_server; exit 143' TERM

# server_failed WHAT: the server's last words and where its log is.
server_failed() {
  echo "demo: $1; the end of $log:" >&2
  tail -20 "$log" >&2
  exit 1
}

if [ ! -f "$model/config.json" ]; then
  "$recur" make-model --family qwen3_5 --preset tiny --seed 1 --out "$model" >"$log" 2>&1 ||
    server_failed "generating the demo model failed"
fi
"$recur" serve -m "$model" --port "$port" >"$log" 2>&1 &
server=$!
for i in $(seq 1 300); do
  kill -0 "$server" 2>/dev/null ||
    server_failed "recur serve stopped at start (port $port taken? RECUR_PORT=8081 picks another)"
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  [ "$i" -lt 300 ] || server_failed "recur serve did not answer /health within 30 s"
  sleep 0.1
done
kill -0 "$server" 2>/dev/null || server_failed "recur serve stopped at start"

cat <<EOF
The demo model was generated with random weights: its replies are random tokens from its
1,000-token vocabulary, gibberish that includes pieces of multi-byte characters, shown as �.
What to watch is the line under each reply: from the second turn on, most of the prompt comes
from the prompt cache. README.md says how to serve a real model.
EOF
phase=chatting
node --no-warnings "$root/scripts/demo-chat.mjs" "$base_url" demo-model
echo
if [ "$keep" = 0 ]; then
  echo "demo: done; the server is stopped (RECUR_DEMO_KEEP=0). Without it the demo keeps serving."
  exit 0
fi
cat <<EOF
recur is serving the demo model at $base_url; Ctrl-C stops it. From another terminal:
  curl $base_url/chat/completions -H 'Content-Type: application/json' -d '{
    "model": "demo-model", "messages": [{"role": "user", "content": "Hello!"}],
    "chat_template_kwargs": {"enable_thinking": false}}'
  curl $base_url/cache/stats
Server log: $log
EOF
phase=serving
rc=0
wait "$server" || rc=$?
server=""
server_failed "recur serve exited by itself (exit code $rc)"
