#!/usr/bin/env bash
# The main job on the built-in demo model: installs and builds what `recur` needs (not the test
# tooling), generates the demo checkpoint (random weights, cached under the build folder), starts
# `recur serve` on it, holds a multi-turn chat, then keeps serving until Ctrl-C.
# RECUR_DEMO_KEEP=0: stop after the chat (scripts, CI). RECUR_BUILD_DIR, RECUR_PORT as usual.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RECUR_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" --for demo "$build"
exec "$root/scripts/demo-chat.sh" "$build"
