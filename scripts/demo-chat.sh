#!/usr/bin/env bash
# Part of demo.sh after the build: the demo model (generated once), `recur serve` on it, and a
# scripted multi-turn chat through the OpenAI SDK. The server keeps running until Ctrl-C when
# RECUR_DEMO_KEEP=1.
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/.." && pwd)
recur="$build/bin/recur"
model="$build/demo-model"
port=${RECUR_PORT:-8080}
if [ ! -f "$model/config.json" ]; then
  "$recur" make-model --family qwen3_5 --preset tiny --seed 1 --out "$model"
fi
"$recur" serve -m "$model" --port "$port" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
node "$root/scripts/demo-chat.mjs" "http://127.0.0.1:$port/v1" demo-model
echo
echo "recur is serving the demo model at http://127.0.0.1:$port/v1 (try /v1/cache/stats)."
if [ "${RECUR_DEMO_KEEP:-0}" = 1 ]; then
  echo "Press Ctrl-C to stop."
  wait $server
fi
