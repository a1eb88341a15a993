#!/usr/bin/env bash
# Runs the whole test suite: installs and builds what is missing, then every ctest test (unit,
# oracle comparisons against Hugging Face's tokenizers and Jinja2, end-to-end through HTTP).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RECUR_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" "$build"
cd "$build"
ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
