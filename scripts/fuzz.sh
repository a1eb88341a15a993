#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 14, ASan + UBSan) in build-fuzz, seeds their corpora from the
# generated checkpoints, test files and fuzz/seeds, replays fuzz/regressions, then fuzzes each
# target for a bounded time. Fails on any crash, leak, timeout or sanitizer report.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]   (docs/fuzzing.md)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-60}
[[ $# -gt 0 ]] && shift
build=${RECUR_FUZZ_BUILD:-$root/build-fuzz}
jobs=${RECUR_FUZZ_JOBS:-$(nproc)}
all_targets=(fuzz_chat_request fuzz_safetensors fuzz_config_json fuzz_tokenizer_json fuzz_tokenize
             fuzz_detokenizer fuzz_jinja fuzz_options fuzz_gbnf fuzz_json_schema)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all_targets[@]}")

# Per target: -max_len and dictionary.
declare -A max_len=([fuzz_chat_request]=16384 [fuzz_safetensors]=16384 [fuzz_config_json]=8192
                    [fuzz_tokenizer_json]=65536 [fuzz_tokenize]=4096 [fuzz_detokenizer]=2048
                    [fuzz_jinja]=24576 [fuzz_options]=1024 [fuzz_gbnf]=4096
                    [fuzz_json_schema]=8192)
declare -A dict=([fuzz_chat_request]=json [fuzz_safetensors]=json [fuzz_config_json]=json
                 [fuzz_tokenizer_json]=json [fuzz_tokenize]=tokenize [fuzz_detokenizer]=""
                 [fuzz_jinja]=jinja [fuzz_options]=options [fuzz_gbnf]=gbnf
                 [fuzz_json_schema]=json)

# Built as OSS-Fuzz builds (-O1, line tables only) and without NDEBUG, so that library assertions
# (nlohmann's among them) are checked too.
configure_and_build() {
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DRECUR_FUZZ=ON \
    -DRECUR_SANITIZE=address,undefined -DRECUR_BUILD_TESTS=OFF -DRECUR_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    >/dev/null
  ninja -C "$build" -j"$jobs" fuzz_all
}

# The options dictionary comes from the option table itself, so it never goes stale.
options_dict() {
  grep -o '\.name = "[a-z0-9-]*"' "$root/src/config/options_table.cc" | sed 's/.*"\(.*\)"/\1/' |
    while read -r name; do
      # shellcheck disable=SC2016  # a literal $RECUR_ in the dictionary
      printf '"--%s"\n"--%s="\n"--no-%s"\n"$RECUR_%s="\n' "$name" "$name" "$name" \
        "$(tr 'a-z-' 'A-Z_' <<<"$name")"
    done
  printf '"auto"\n"true"\n"off"\n"KiB"\n"GiB"\n"ms"\n"5m"\n"\\x0a"\n"--"\n'
}

# A safetensors seed that fits -max_len: the generated file's header, with its tensors' offsets
# packed into a smaller data block (the first tensors only).
small_safetensors() {
  python3 - "$1" "$2" <<'EOF'
import json, struct, sys
src, dst = sys.argv[1], sys.argv[2]
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
out, off = {}, 0
for name, e in header.items():
    if name == "__metadata__":
        out[name] = e
        continue
    size = e["data_offsets"][1] - e["data_offsets"][0]
    if off + size > 4096:
        continue
    out[name] = dict(e, data_offsets=[off, off + size])
    off += size
text = json.dumps(out).encode()
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + bytes(off))
EOF
}

make_seeds() {
  local corpus=$build/corpus gen=$build/seed-models
  rm -rf "$gen" && "$build/fuzz/fuzz_seeds" "$gen"
  for t in "${all_targets[@]}"; do
    mkdir -p "$corpus/$t"
    local committed=("$root/fuzz/seeds/$t"/*)
    if [[ -e ${committed[0]} ]]; then cp "${committed[@]}" "$corpus/$t/"; fi
  done
  for fam in qwen3 qwen3_5 mamba2; do
    cp "$gen/$fam/config.json" "$corpus/fuzz_config_json/seed-$fam-config.json"
    cp "$gen/$fam/generation_config.json" "$corpus/fuzz_config_json/seed-$fam-generation.json"
    cp "$gen/$fam/tokenizer.json" "$corpus/fuzz_tokenizer_json/seed-$fam-tokenizer.json"
    { cat "$gen/$fam/tokenizer.json"; printf '\0'; cat "$gen/$fam/tokenizer_config.json"; } \
      >"$corpus/fuzz_tokenizer_json/seed-$fam-with-config.json"
    for st in "$gen/$fam"/*.safetensors; do
      small_safetensors "$st" "$corpus/fuzz_safetensors/seed-$fam-$(basename "$st")"
    done
  done
  for f in "$root"/tests/template/chat_templates/*.jinja; do
    cp "$f" "$corpus/fuzz_jinja/seed-$(basename "$f")"
  done
  for f in "$root"/tests/tokenizer/corpus/*; do
    head -c 4096 "$f" >"$corpus/fuzz_tokenize/seed-$(basename "$f")"
  done
  cp "$root"/fuzz/seeds/fuzz_chat_request/* "$corpus/fuzz_tokenize/"
  options_dict >"$build/options.dict"
}

# "#123 DONE cov: 1 ft: 2 corp: 3/4b lim: 5 exec/s: 6 rss: 7Mb" -> the value after `key: `.
stat_of() { { grep -o "$2: [0-9]*" <<<"$1" || true; } | head -1 | awk '{print $2}'; }

# Each target runs in its own background job (RECUR_FUZZ_JOBS at a time), so its result row and
# failure mark go through files.
run_target() {
  local t=$1 bin=$build/fuzz/$1 log=$build/logs/$1.log
  local artifacts=$build/artifacts/$t/ dict_args=()
  mkdir -p "$artifacts" "$build/logs"
  case ${dict[$t]} in
    options) dict_args=(-dict="$build/options.dict") ;;
    "") ;;
    *) dict_args=(-dict="$root/fuzz/dicts/${dict[$t]}.dict") ;;
  esac
  local regressions=("$root/fuzz/regressions/$t"/*)
  if [[ -e ${regressions[0]} ]]; then
    if ! "$bin" -rss_limit_mb=2048 -timeout=10 "${regressions[@]}" >"$build/logs/$t.replay.log" 2>&1; then
      echo "FAIL $t: a regression input fails again; log: $build/logs/$t.replay.log" >&2
      tail -30 "$build/logs/$t.replay.log" >&2
      echo "reproduce: $bin ${regressions[*]}" >&2
      touch "$build/logs/$t.failed"
      return
    fi
  fi
  local rc=0
  "$bin" "$build/corpus/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len="${max_len[$t]}" "${dict_args[@]}" -artifact_prefix="$artifacts" \
    -print_final_stats=1 >"$log" 2>&1 || rc=$?
  local inited done_line
  inited=$(grep -m1 'INITED' "$log" || true)
  done_line=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|RELOAD)' "$log" | tail -1 || true)
  local runs secs_run
  runs=$({ grep -o 'Done [0-9]* runs' "$log" || true; } | awk '{print $2}')
  secs_run=$({ grep -o 'runs in [0-9]* second' "$log" || true; } | awk '{print $3}')
  local cov0 cov1
  cov0=$(stat_of "$inited" cov)
  cov1=$(stat_of "$done_line" cov)
  printf '%-20s %12s %8s %8s %10s\n' "$t" "${runs:-?}" \
    "$([[ -n $runs && ${secs_run:-0} -gt 0 ]] && echo $((runs / secs_run)) || echo '?')" \
    "$(find "$build/corpus/$t" -type f | wc -l)" \
    "$([[ -n $cov0 && -n $cov1 ]] && echo "+$((cov1 - cov0)) ($cov1)" || echo '?')" \
    >"$build/logs/$t.row"
  if [[ $rc -ne 0 ]]; then
    echo "FAIL $t (exit $rc); log: $log" >&2
    grep -iE 'ERROR|SUMMARY|runtime error|check failed|deadly signal|timeout|out-of-memory' "$log" |
      head -10 >&2 || true
    local crash
    crash=$({ grep -o "Test unit written to .*" "$log" || true; } | tail -1 | sed 's/Test unit written to //')
    echo "reproduce: $bin ${crash:-<see log>}" >&2
    touch "$build/logs/$t.failed"
  fi
}

SECONDS=0
configure_and_build
build_s=$SECONDS
make_seeds
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$build/logs"
for t in "${targets[@]}"; do
  rm -f "$build/logs/$t.row" "$build/logs/$t.failed"
done
# The targets are independent single-threaded processes: on 2 cores two at a time halve the stage
# without shortening any target's run.
for t in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  echo "== $t (${secs}s)"
  run_target "$t" &
done
wait

failed=()
printf '\n%-20s %12s %8s %8s %10s\n' target executions exec/s corpus "new cov (total)"
for t in "${targets[@]}"; do
  if [[ -f $build/logs/$t.row ]]; then cat "$build/logs/$t.row"; fi
  # No row without a failure mark: the job died early (a failing command under set -e).
  if [[ -f $build/logs/$t.failed || ! -f $build/logs/$t.row ]]; then failed+=("$t"); fi
done
echo "fuzz: ${SECONDS}s in all (build ${build_s}s)"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets clean"
