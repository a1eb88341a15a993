#!/usr/bin/env bash
# Part of demo.sh after the build: the demo model, the server and a scripted conversation.
set -euo pipefail
build=$1
recur="$build/bin/recur"
model="$build/demo-model"
if [ ! -f "$model/config.json" ]; then
  "$recur" make-model --family qwen3_5 --preset tiny --seed 1 --out "$model"
fi
"$recur" serve -m "$model" --port "${RECUR_PORT:-8080}"
