#!/usr/bin/env bash
# The main job on the built-in demo model: builds if needed, generates the demo checkpoint (random
# weights, cached under the build folder), starts `recur serve` on it and holds a multi-turn chat.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RECUR_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" "$build"
exec "$root/scripts/demo-chat.sh" "$build"
