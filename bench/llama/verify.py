#!/usr/bin/python3
# Check that a converted GGUF computes the same model as recur does from the checkpoint: both
# decode greedily from the same prompt token ids, and per generated token we compare the chosen
# id and the top-K ids with their log-probabilities.
#
# llama.cpp side: llama_greedy (llama_greedy.cpp, built here against LLAMA_BIN_DIR's libllama).
# recur side: `recur serve`, POST /v1/completions with the prompt as token ids, temperature 0,
# logprobs K. recur reports tokens as text, and the stand-in tokenizers have ~1000 tokens while
# the embedding has the full vocabulary, so recur is pointed at a copy of the checkpoint (links)
# whose tokenizer.json names every id "<|x{id}|>", making text -> id exact.
#
# Usage: verify.py --recur BIN --llama-bin-dir DIR --llama-cpp DIR --work DIR CKPT:GGUF...
#        [--tokens 16] [--top-k 10] [--threads 1] [--isa avx2] [--port 18431]
import argparse, json, os, random, re, subprocess, sys, time, urllib.request
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument('pairs', nargs='+', help='CHECKPOINT_DIR:MODEL.gguf')
ap.add_argument('--recur', required=True)
ap.add_argument('--llama-bin-dir', required=True, help='dir with libllama.so (a llama.cpp build/bin)')
ap.add_argument('--llama-cpp', required=True, help='llama.cpp checkout (headers)')
ap.add_argument('--work', required=True, type=Path)
ap.add_argument('--tokens', type=int, default=16)
ap.add_argument('--top-k', type=int, default=10)
ap.add_argument('--prompt-len', type=int, default=32)
ap.add_argument('--threads', type=int, default=1)
ap.add_argument('--isa', default='auto')
ap.add_argument('--port', type=int, default=18431)
args = ap.parse_args()
args.work.mkdir(parents=True, exist_ok=True)

here = Path(__file__).resolve().parent
greedy = args.work / 'llama_greedy'
if not greedy.exists() or greedy.stat().st_mtime < (here / 'llama_greedy.cpp').stat().st_mtime:
    L, B = args.llama_cpp, os.path.abspath(args.llama_bin_dir)
    subprocess.run(['g++', '-std=c++17', '-O2', f'-I{L}/include', f'-I{L}/ggml/include',
                    str(here / 'llama_greedy.cpp'), f'-L{B}', '-lllama', f'-Wl,-rpath,{B}',
                    '-o', str(greedy)], check=True)


def id_named_copy(ckpt: Path, n_vocab: int) -> Path:
    dst = args.work / ('ids-' + ckpt.resolve().name)
    dst.mkdir(exist_ok=True)
    for f in ckpt.iterdir():
        if f.name not in ('tokenizer.json', 'tokenizer_config.json') and not (dst / f.name).exists():
            os.symlink(f.resolve(), dst / f.name)
    tok = json.load(open(ckpt / 'tokenizer.json'))
    # every id's text becomes "<|x{id}|>" (ASCII, so byte-level decoding leaves it as it is):
    # the BPE vocabulary's ids under that name, every other id an added (non-special) token
    vocab_ids = sorted(tok['model']['vocab'].values())
    tok['model']['vocab'] = {f'<|x{i}|>': i for i in vocab_ids}
    tok['model']['merges'] = []
    have = set(vocab_ids)
    tok['added_tokens'] = [{'id': i, 'content': f'<|x{i}|>', 'single_word': False, 'lstrip': False,
                            'rstrip': False, 'normalized': False, 'special': False}
                           for i in range(n_vocab) if i not in have]
    json.dump(tok, open(dst / 'tokenizer.json', 'w'))
    return dst


def to_id(text):
    return int(re.fullmatch(r'<\|x(\d+)\|>', text)[1])


def recur_greedy(ckpt: Path, prompt, n_vocab):
    d = id_named_copy(ckpt, n_vocab)
    log = open(args.work / f'serve-{ckpt.name}.log', 'w')
    p = subprocess.Popen([args.recur, 'serve', '-m', str(d), '--port', str(args.port),
                          '--threads', str(args.threads), '--parallel', '1', '--no-prompt-cache',
                          '--isa', args.isa, '--no-webui', '--ctx-size', '4096'],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f'http://127.0.0.1:{args.port}'
        for _ in range(600):
            try:
                urllib.request.urlopen(url + '/health', timeout=1)
                break
            except OSError:
                if p.poll() is not None:
                    sys.exit(f'recur serve exited; see {log.name}')
                time.sleep(0.5)
        body = json.dumps({'prompt': prompt, 'max_tokens': args.tokens, 'temperature': 0,
                           'logprobs': args.top_k}).encode()
        req = urllib.request.Request(url + '/v1/completions', body, {'content-type': 'application/json'})
        r = json.load(urllib.request.urlopen(req, timeout=600))
    finally:
        p.terminate()
        p.wait()
    lp = r['choices'][0]['logprobs']
    steps = []
    for t, top in zip(lp['tokens'], lp['top_logprobs']):
        steps.append({'id': to_id(t), 'top': sorted(([to_id(k), v] for k, v in top.items()),
                                                    key=lambda kv: -kv[1])})
    return steps


def llama_greedy(gguf, prompt):
    out = subprocess.run([str(greedy), gguf, str(args.tokens), str(args.threads), str(args.top_k),
                          ','.join(map(str, prompt))], capture_output=True, text=True, check=True)
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]


ok = True
for pair in args.pairs:
    ckpt_s, gguf = pair.rsplit(':', 1)
    ckpt = Path(ckpt_s)
    config = json.load(open(ckpt / 'config.json'))
    n_vocab = {**config, **config.get('text_config', {})}['vocab_size']
    rng = random.Random(1234)
    prompt = [rng.randrange(1000) for _ in range(args.prompt_len)]
    a = recur_greedy(ckpt, prompt, n_vocab)
    b = llama_greedy(gguf, prompt)
    ids_a, ids_b = [s['id'] for s in a], [s['id'] for s in b]
    agree = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), len(ids_a))
    # over the steps both took the same path: top-K overlap and log-prob differences
    overlap, maxdiff, gaps = [], 0.0, []
    for sa, sb in zip(a[:agree], b[:agree]):
        ka = {k: v for k, v in sa['top']}
        kb = {k: v for k, v in sb['top']}
        common = ka.keys() & kb.keys()
        overlap.append(len(common))
        maxdiff = max([maxdiff] + [abs(ka[k] - kb[k]) for k in common])
        gaps.append(sb['top'][0][1] - sb['top'][1][1])
    print(f'{gguf}: greedy ids agree on {agree}/{len(ids_a)} tokens; '
          f'top-{args.top_k} overlap min {min(overlap) if overlap else 0}/{args.top_k}; '
          f'max |logprob diff| over shared top ids {maxdiff:.4f}; '
          f'smallest top1-top2 logprob gap {min(gaps) if gaps else 0:.4f}')
    print(f'  recur:     {ids_a}')
    print(f'  llama.cpp: {ids_b}')
    if agree < len(ids_a):
        i = agree
        print(f'  first difference at step {i}: recur top {a[i]["top"][:3]}, llama.cpp top {b[i]["top"][:3]}')
        ok = False
sys.exit(0 if ok else 1)
