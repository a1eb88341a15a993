"""Exactness test: renders the whole oracle corpus (oracle_cases.py) with Python Jinja2 set up as
Hugging Face's apply_chat_template sets it up, and with recur (template_render --batch), and
compares byte for byte. Where Jinja2 raises, recur must fail too (with the template's message
for raise_exception). Exit status 1 on any difference.

Usage: jinja2_oracle.py RENDER_BIN SOURCE_DIR NODE_MODULES WORK_DIR
       jinja2_oracle.py --render-cases CASES.json OUT.json   (Jinja2 only, for hf_jinja_oracle.mjs)"""

import datetime
import json
import os
import subprocess
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_cases  # noqa: E402


CURRENT_NOW = [None]  # the case being rendered's fixed time, if any


def hf_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        now = CURRENT_NOW[0]
        when = datetime.datetime.fromtimestamp(now) if now else datetime.datetime.now()
        return when.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_jinja2(env, compiled, case):
    path = case["template"]
    CURRENT_NOW[0] = case.get("now")
    try:
        if path not in compiled:
            with open(path, encoding="utf-8", newline="") as f:
                compiled[path] = env.from_string(f.read())
        return True, compiled[path].render(**case["context"])
    except Exception as e:  # noqa: BLE001 - any Jinja2 failure is an expected outcome to match
        return False, "{}: {}".format(type(e).__name__, e)


def render_cases_only(cases_path, out_path):
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    env = hf_environment()
    compiled = {}
    results = []
    for case in cases:
        ok, text = render_jinja2(env, compiled, case)
        results.append({"ok": ok, "out": text if ok else "", "error": "" if ok else text})
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)
    return 0


def main():
    if sys.argv[1] == "--render-cases":
        return render_cases_only(sys.argv[2], sys.argv[3])
    render_bin, source_dir, node_modules, work_dir = sys.argv[1:5]
    os.makedirs(work_dir, exist_ok=True)
    cases = oracle_cases.cases(source_dir, node_modules, work_dir)
    cases_path = os.path.join(work_dir, "cases.json")
    with open(cases_path, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)
    proc = subprocess.run([render_bin, "--batch", cases_path], capture_output=True, check=True)
    ours = json.loads(proc.stdout.decode("utf-8"))
    env = hf_environment()
    compiled = {}
    n_rendered = n_raised = 0
    failures = []
    for case, mine in zip(cases, ours):
        ok, text = render_jinja2(env, compiled, case)
        if ok:
            n_rendered += 1
            if not mine["ok"]:
                failures.append("{}: Jinja2 rendered, recur failed: {}".format(case["label"], mine["error"]))
            elif mine["out"] != text:
                failures.append("{}: output differs\n--- jinja2\n{!r}\n--- recur\n{!r}".format(
                    case["label"], text, mine["out"]))
        else:
            n_raised += 1
            if mine["ok"]:
                failures.append("{}: Jinja2 raised ({}), recur rendered".format(case["label"], text))
            elif text.startswith("TemplateError: ") and text[15:] not in mine["error"]:
                failures.append("{}: raise_exception message differs: {!r} vs {!r}".format(
                    case["label"], text, mine["error"]))
    for f in failures[:20]:
        print(f)
    print("jinja2 oracle: {} cases, {} rendered identically expected, {} raised in Jinja2, "
          "{} differences".format(len(cases), n_rendered, n_raised, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
