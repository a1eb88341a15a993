#!/usr/bin/env bash
# The sanitizer suites: the whole test suite (unit, oracle and end-to-end tests, the server binary
# included) built with AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrent parts
# (cache, engine, HTTP worker pool and server) under ThreadSanitizer. Any report fails.
# Usage: scripts/test-sanitizers.sh [asan] [tsan]   (both when none is named)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(asan tsan)

# Reports abort the process, so a test that triggers one fails; leaks are reported at exit.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true

run_asan() {
  local build=$root/build-asan
  RECUR_SANITIZE=address,undefined "$root/scripts/setup.sh" "$build"
  # promtool lives in each build folder; setup.sh extracted it there too.
  # The coding agents' tests (label agents) send 20-40k-token prompts through code the other
  # end-to-end tests cover; under ASan each would take minutes.
  ctest --test-dir "$build" --output-on-failure --timeout 1800 -j "$(nproc)" -LE agents
}

run_tsan() {
  local build=$root/build-tsan
  local launcher=()
  command -v ccache >/dev/null 2>&1 &&
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  [ -f "$build/build.ninja" ] ||
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DRECUR_SANITIZE=thread -DRECUR_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
  local tests=(cache_test engine_test server_test util_test)
  cmake --build "$build" --parallel "$(nproc)" --target "${tests[@]}"
  for t in "${tests[@]}"; do
    local bin
    bin=$(find "$build/tests" -name "$t" -type f -executable | head -1)
    echo "tsan: $t" >&2
    "$bin" --gtest_brief=1
  done
}

for s in "${suites[@]}"; do
  case "$s" in
    asan) run_asan ;;
    tsan) run_tsan ;;
    *) echo "test-sanitizers.sh: unknown suite '$s' (asan, tsan)" >&2; exit 2 ;;
  esac
done
