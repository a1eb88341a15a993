"""End-to-end test of `recur template` through the real binary on the real Qwen3, Llama 3, Gemma 3
and DeepSeek V3 tokenizer directories (@lenml packages): the printed prompt must equal Python
Jinja2's rendering with the context apply_chat_template builds (messages, tools,
add_generation_prompt, the special tokens, the kwargs), and the token count must equal the count
of the real HF tokenizer (@anush008/tokenizers, special tokens parsed, none added).

Usage: cmd_template_test.py RECUR_BIN SOURCE_DIR NODE_MODULES WORK_DIR"""

import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jinja2_oracle  # noqa: E402

COUNT_JS = """
const { createRequire } = require('node:module');
const r = createRequire(process.argv[1] + '/noop.js');
const { Tokenizer } = r('@anush008/tokenizers');
const fs = require('node:fs');
(async () => {
  const tok = Tokenizer.fromFile(process.argv[2]);
  const enc = await tok.encode(fs.readFileSync(process.argv[3], 'utf8'), null, { addSpecialTokens: false });
  process.stdout.write(String(enc.getIds().length));
})();
"""


def special_tokens(config):
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        v = config.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            out[key] = v
    return out


def check_errors(recur, node_modules, work_dir):
    """The template's own raise_exception reaches the user with its message and exit status 1;
    a missing --messages is a usage error (2)."""
    failures = 0
    gemma = os.path.join(node_modules, "@lenml", "tokenizer-gemma3", "models")
    bad = os.path.join(work_dir, "not_alternating.json")
    with open(bad, "w", encoding="utf-8") as f:
        json.dump([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], f)
    proc = subprocess.run([recur, "template", "-m", gemma, "--messages", bad], capture_output=True)
    err = proc.stderr.decode()
    if proc.returncode != 1 or "Conversation roles must alternate" not in err or "line " not in err:
        print("raise_exception: rc={} stderr={!r}".format(proc.returncode, err))
        failures += 1
    proc = subprocess.run([recur, "template", "-m", gemma], capture_output=True)
    if proc.returncode != 2 or "--messages" not in proc.stderr.decode():
        print("missing --messages: rc={} stderr={!r}".format(proc.returncode, proc.stderr.decode()))
        failures += 1
    return failures


def main():
    recur, source_dir, node_modules, work_dir = sys.argv[1:5]
    os.makedirs(work_dir, exist_ok=True)
    with open(os.path.join(source_dir, "tests/template/oracle_messages.json"), encoding="utf-8") as f:
        corpus = json.load(f)
    sets = {s["name"]: s for s in corpus["sets"]}
    runs = [("qwen3", "tool_call_dict_args", True, '{"enable_thinking": false}'),
            ("qwen3", "reasoning_content", False, ""),
            ("qwen3", "unicode", True, '{"enable_thinking": true}'),
            ("llama3", "multi_turn", True, ""),
            ("gemma3", "multi_turn", True, ""),
            ("deepseek_v3", "tool_call_dict_args", True, "")]
    env = jinja2_oracle.hf_environment()
    failures = 0
    for family, set_name, generation_prompt, kwargs in runs:
        model_dir = os.path.join(node_modules, "@lenml", "tokenizer-" + family, "models")
        with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        chat = {"messages": sets[set_name]["messages"]}
        if sets[set_name].get("tools"):
            chat["tools"] = corpus["tools"]
        messages_path = os.path.join(work_dir, "{}_{}.json".format(family, set_name))
        with open(messages_path, "w", encoding="utf-8") as f:
            json.dump(chat, f, ensure_ascii=False)
        args = [recur, "template", "-m", model_dir, "--messages", messages_path]
        if not generation_prompt:
            args.append("--no-generation-prompt")
        if kwargs:
            args += ["--kwargs", kwargs]
        proc = subprocess.run(args, capture_output=True)
        label = "{} / {} / gen={} / {}".format(family, set_name, generation_prompt, kwargs)
        context = dict(chat, add_generation_prompt=generation_prompt, **special_tokens(config))
        context.update(json.loads(kwargs) if kwargs else {})
        try:
            expected = env.from_string(config["chat_template"]).render(**context)
        except Exception as e:  # noqa: BLE001
            expected = None
            if proc.returncode == 0:
                print("{}: Jinja2 raised {} but recur rendered".format(label, e))
                failures += 1
            continue
        if proc.returncode != 0:
            print("{}: recur failed: {}".format(label, proc.stderr.decode()))
            failures += 1
            continue
        got = proc.stdout.decode("utf-8")
        if got != expected:
            print("{}: prompt differs\n--- jinja2\n{!r}\n--- recur\n{!r}".format(label, expected, got))
            failures += 1
            continue
        text_path = messages_path + ".prompt.txt"
        with open(text_path, "w", encoding="utf-8", newline="") as f:
            f.write(expected)
        count = subprocess.run(["node", "-e", COUNT_JS, os.path.abspath(node_modules),
                                os.path.join(model_dir, "tokenizer.json"), text_path],
                               capture_output=True, check=True).stdout.decode()
        reported = proc.stderr.decode().strip().splitlines()[-1]
        if reported != "{} tokens".format(count):
            print("{}: token count {!r}, HF tokenizer says {}".format(label, reported, count))
            failures += 1
    failures += check_errors(recur, node_modules, work_dir)
    print("recur template: {} runs, {} failures".format(len(runs), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
