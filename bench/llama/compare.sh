#!/usr/bin/env bash
# recur vs llama.cpp on the same weights: prefill (pp512) and decode (tg) tokens/s, one table.
#
# Usage: compare.sh LLAMA_BIN_DIR RECUR_BIN WORK_DIR      (or set those three as env variables)
#   LLAMA_BIN_DIR  a llama.cpp build's bin/ with llama-bench and llama-quantize (builds nothing)
#   RECUR_BIN      the recur binary
#   WORK_DIR       checkpoints, GGUFs and raw outputs go here (kept: a second run reuses them)
# Environment:
#   LLAMA_CPP_DIR  llama.cpp checkout for gguf-py (default: LLAMA_BIN_DIR/../..)
#   RECUR_ISA      recur's kernel ISA (auto|avx512|avx2-vnni|avx2|...); set avx2 against an
#                  AVX2-only llama.cpp build so both sides use the same instructions
#   THREADS        compute threads on both sides (default 2)
#   MODELS         presets (default "qwen3-0.6b qwen3.5-0.8b mamba2-130m")
#   FORMATS        weight formats (default "bf16 q8 q4")
#   QUIET_PCT      if set, before each bench wait (at most QUIET_WAIT_S s, default 900) until
#                  other processes keep less than this % of all cores busy for a second
#
# Same weights: recur make-model writes a random-weight Hugging Face checkpoint, convert_gguf.py
# turns it into a BF16 GGUF (what llama.cpp's convert_hf_to_gguf.py would write), llama-quantize
# makes Q8_0 and Q4_0 from that; recur quantizes the checkpoint on load (--quantize q8|q4, MLX
# affine, groups of 64). Formats compared: bf16 vs BF16, q8 vs Q8_0, q4 vs Q4_0.
#   Q4_0 is made with --pure: llama-quantize would otherwise store the output head (the tied
#   embedding) as Q6_K, while recur's q4 holds every Linear and Embedding at 4 bits.
#   Bits per weight: recur q8 g64 8.5 (bf16 scale + bias per 64), Q8_0 8.5 (f16 scale per 32);
#   recur q4 g64 4.5, Q4_0 4.5.
#
# What each side measures (THREADS threads, random token ids):
#   pp512  llama-bench -p 512 -n 0 -r 2: a 512-token prompt into an empty context in one batch,
#          after a warm-up run; we take the best of the 2 reps.
#          recur bench --bench-prompts 512: a 512-token prompt into an empty sequence in one
#          forward, best of 2.
#   tg     llama-bench -p 0 -n 32 -d 64 -r 2: 64 tokens of context prefilled untimed, then 32
#          single-token decode steps (positions 64..95) timed, after a warm-up; mean of the 2 reps.
#          recur bench --bench-sequences 1 --bench-context 64: 64 tokens of context, one untimed
#          step, then 32 timed single-sequence steps (positions 65..96): tokens / total time.
#          recur pairs each step with a memory-bandwidth probe pass run just before it, so its
#          steps start with the caches holding the probe's buffer, not the weights.
#   Both print logits for the last position only; llama-bench's flash attention is its default
#   (auto); the KV cache is f16 in llama.cpp and bf16 in recur.
set -euo pipefail

LLAMA_BIN_DIR=${1:-${LLAMA_BIN_DIR:?usage: compare.sh LLAMA_BIN_DIR RECUR_BIN WORK_DIR}}
RECUR_BIN=${2:-${RECUR_BIN:?usage: compare.sh LLAMA_BIN_DIR RECUR_BIN WORK_DIR}}
WORK_DIR=${3:-${WORK_DIR:?usage: compare.sh LLAMA_BIN_DIR RECUR_BIN WORK_DIR}}
HERE=$(cd "$(dirname "$0")" && pwd)
LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-$(cd "$LLAMA_BIN_DIR/../.." && pwd)}
THREADS=${THREADS:-2}
MODELS=${MODELS:-qwen3-0.6b qwen3.5-0.8b mamba2-130m}
FORMATS=${FORMATS:-bf16 q8 q4}
REPS=2
PROMPT=512
CONTEXT=64
STEPS=32  # recur bench times 32 decode steps (kDecodeSteps in src/app/cmd_bench.cc)

for f in "$LLAMA_BIN_DIR/llama-bench" "$LLAMA_BIN_DIR/llama-quantize" "$RECUR_BIN"; do
  [[ -x $f ]] || { echo "compare.sh: $f is not an executable" >&2; exit 1; }
done
[[ -d $LLAMA_CPP_DIR/gguf-py ]] || { echo "compare.sh: no gguf-py in $LLAMA_CPP_DIR (set LLAMA_CPP_DIR)" >&2; exit 1; }
export LLAMA_CPP_DIR
ISA_ARGS=()
[[ -n ${RECUR_ISA:-} ]] && ISA_ARGS=(--isa "$RECUR_ISA")

mkdir -p "$WORK_DIR/models" "$WORK_DIR/gguf" "$WORK_DIR/out"
RESULTS=$WORK_DIR/out/results.tsv
: >"$RESULTS"
log() { echo "[compare] $*" >&2; }
# Share of all cores (%) busy with other work over 1 s, sampled before each bench: llama.cpp's
# threads wait for each other at every graph node, so a thread that loses its core to another
# process stalls the whole step (on a 2-core machine with one core busy, tg can drop 50x).
busy() {
  local a b
  read -ra a </proc/stat; sleep 1; read -ra b </proc/stat
  local total=0 idle=$(( b[4] + b[5] - a[4] - a[5] )) i
  for i in 1 2 3 4 5 6 7 8; do total=$(( total + b[i] - a[i] )); done
  echo $(( total > 0 ? 100 * (total - idle) / total : 0 ))
}
# busy(), after waiting for the machine to quieten down when QUIET_PCT is set
settle() {
  local b waited=0
  b=$(busy)
  while [[ -n ${QUIET_PCT:-} ]] && (( b >= QUIET_PCT && waited < ${QUIET_WAIT_S:-900} )); do
    sleep 4; waited=$(( waited + 5 )); b=$(busy)
  done
  echo "$b"
}

family_of() {
  case $1 in
    qwen3-*) echo qwen3 ;;
    qwen3.5-*) echo qwen3_5 ;;
    mamba2-*) echo mamba2 ;;
    *) echo "compare.sh: no family known for preset $1" >&2; exit 1 ;;
  esac
}

# Newer than all of the following files?
fresh() { local t=$1; shift; [[ -s $t ]] || return 1; for d; do [[ $t -nt $d ]] || return 1; done; }

for preset in $MODELS; do
  family=$(family_of "$preset")
  ckpt=$WORK_DIR/models/$preset
  if [[ ! -f $ckpt/config.json ]]; then
    log "$preset: make-model"
    "$RECUR_BIN" make-model --family "$family" --preset "$preset" -o "$ckpt" --log-level warn >&2
  fi
  bf16=$WORK_DIR/gguf/$preset-bf16.gguf
  if ! fresh "$bf16" "$ckpt/config.json" "$HERE/convert_gguf.py"; then
    log "$preset: convert to $bf16"
    /usr/bin/python3 "$HERE/convert_gguf.py" "$ckpt" "$bf16" --outtype bf16 >&2
  fi
  for fmt in $FORMATS; do
    case $fmt in
      bf16) gguf=$bf16; qarg=none ;;
      q8) gguf=$WORK_DIR/gguf/$preset-q8_0.gguf; qarg=q8; qtype=Q8_0; pure=() ;;
      q4) gguf=$WORK_DIR/gguf/$preset-q4_0.gguf; qarg=q4; qtype=Q4_0; pure=(--pure) ;;
      *) echo "compare.sh: unknown format $fmt" >&2; exit 1 ;;
    esac
    if [[ $fmt != bf16 ]] && ! fresh "$gguf" "$bf16"; then
      log "$preset: llama-quantize ${pure[*]} $qtype"
      "$LLAMA_BIN_DIR/llama-quantize" "${pure[@]}" "$bf16" "$gguf" "$qtype" "$THREADS" >"$WORK_DIR/out/$preset-$fmt-quantize.log" 2>&1
    fi
    out=$WORK_DIR/out/$preset-$fmt
    load=$(settle)
    log "$preset $fmt: llama-bench pp$PROMPT (other load $load%)"
    "$LLAMA_BIN_DIR/llama-bench" -m "$gguf" -p $PROMPT -n 0 -t "$THREADS" -r $REPS -o json \
      >"$out-llama-pp.json" 2>"$out-llama-pp.log"
    l=$(settle); load="$load/$l"
    log "$preset $fmt: llama-bench tg$STEPS at depth $CONTEXT (other load $l%)"
    "$LLAMA_BIN_DIR/llama-bench" -m "$gguf" -p 0 -n $STEPS -d $CONTEXT -t "$THREADS" -r $REPS -o json \
      >"$out-llama-tg.json" 2>"$out-llama-tg.log"
    l=$(settle); load="$load/$l"
    log "$preset $fmt: recur bench --quantize $qarg ${ISA_ARGS[*]} (other load $l%)"
    "$RECUR_BIN" bench -m "$ckpt" --quantize "$qarg" --bench-prompts $PROMPT --bench-sequences 1 \
      --bench-context $CONTEXT --threads "$THREADS" "${ISA_ARGS[@]}" >"$out-recur.txt" 2>"$out-recur.log"
    /usr/bin/python3 - "$preset" "$fmt" "$out" "$load" >>"$RESULTS" <<'EOF'
import json, re, sys
preset, fmt, out, load = sys.argv[1:]
pp = json.load(open(out + '-llama-pp.json'))[0]
tg = json.load(open(out + '-llama-tg.json'))[0]
text = open(out + '-recur.txt').read()
r_pp = float(re.search(r'^\| prefill \| [^|]+\| 0 \| \d+ \| ([\d.]+) \|', text, re.M)[1])
decode = re.search(r'^\| decode \| [^|]+\| 1 \| ([\d.]+) \| [^|]+\| ([\d.]+) GB/s', text, re.M)
r_tg, bandwidth = float(decode[1]), decode[2]
print('\t'.join(map(str, [preset, fmt, r_pp, max(pp['samples_ts']), r_tg, tg['avg_ts'],
                          pp['model_type'], pp['build_commit'], load, bandwidth])))
EOF
  done
done

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo
echo "CPU: $cpu; threads $THREADS; recur ISA ${RECUR_ISA:-auto}; $("$RECUR_BIN" version | head -1);" \
  "llama.cpp $(cut -f8 "$RESULTS" | head -1) ($LLAMA_BIN_DIR)"
echo "pp$PROMPT: best of $REPS reps, empty context. tg: $STEPS decode steps after $CONTEXT tokens of" \
  "context (llama.cpp: mean of $REPS reps). Ratio: recur / llama.cpp."
echo
/usr/bin/python3 - "$RESULTS" <<'EOF'
import sys
names = {'bf16': 'bf16 / BF16', 'q8': 'q8 g64 / Q8_0', 'q4': 'q4 g64 / Q4_0 (pure)'}
rows = [line.rstrip('\n').split('\t') for line in open(sys.argv[1])]
print('| model | format | recur pp512 | llama.cpp pp512 | ratio | recur tg | llama.cpp tg | ratio |')
print('|---|---|---|---|---|---|---|---|')
for preset, fmt, rpp, lpp, rtg, ltg, *_ in rows:
    rpp, lpp, rtg, ltg = map(float, (rpp, lpp, rtg, ltg))
    print(f'| {preset} | {names.get(fmt, fmt)} | {rpp:.1f} | {lpp:.1f} | {rpp / lpp:.2f} '
          f'| {rtg:.1f} | {ltg:.1f} | {rtg / ltg:.2f} |')
print()
print('CPU busy with other processes in the second before each bench, % of all cores '
      '(llama.cpp pp / llama.cpp tg / recur): ' + ', '.join(f'{r[0]} {r[1]} {r[8]}' for r in rows))
print('Host read bandwidth recur bench measured next to its decode steps (it wanders between '
      'minutes on a VM; tg follows it): ' + ', '.join(f'{r[0]} {r[1]} {r[9]} GB/s' for r in rows))
EOF
