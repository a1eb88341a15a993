#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing (the test tooling included) and builds every
# target, then every ctest test (unit, oracle comparisons against Hugging Face's tokenizers and
# Jinja2, end-to-end through HTTP). Extra arguments go to ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RECUR_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" --for test "$build"
cd "$build"
ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
