"""Regenerates feature_goldens.json: each small template of the feature suite rendered by Python
Jinja2 3.1 with Hugging Face's settings (the expected output, or the error Jinja2 raises).
Run: python3 tests/template/make_feature_goldens.py  (after adding a feature below)."""

import json
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jinja2_oracle  # noqa: E402

MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "content": "r"}]
CTX = {"messages": MSGS, "n": 7, "f": 2.5, "s": "  Hello World  ", "items": [3, 1, 2], "d": {"b": 2, "a": 1},
       "u": "héllo wörld 😀", "none": None, "t": True, "nested": {"x": {"y": [10, 20, 30]}},
       "ws": "\u00a0\u3000 hi\u2003there \u00a0\n"}

FEATURES = [
    ("whitespace_trim_lstrip", "{% if true %}\n    A\n{% endif %}\n  {% for i in [1,2] %}\n{{ i }}\n  {% endfor %}\nend"),
    ("whitespace_minus", "a  {{- ' b ' -}}  c {%- if true -%}  d  {%- endif -%}  e"),
    ("whitespace_plus", "x\n    {%+ if true %}y{% endif +%}\nz"),
    ("comments", "a{# c #}b\n  {#- c2 -#}  \nc{# multi\nline #}\nd"),
    ("raw_block", "{% raw %}{{ not evaluated }} {% if %}{% endraw %}!"),
    ("trailing_newline", "text\n"),
    ("crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc"),
    ("if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %},{% endfor %}"),
    ("for_loop_vars", "{% for x in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}"),
    ("for_prev_next", "{% for x in items %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{% endfor %}"),
    ("for_cycle", "{% for x in items %}{{ loop.cycle('a', 'b') }}{% endfor %}"),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}"),
    ("for_inline_if", "{% for x in items if x > 1 %}{{ x }}{{ loop.index }}{{ loop.length }} {% endfor %}"),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in d|dictsort %}{{ k }}{{ v }}{% endfor %}"),
    ("for_dict_keys", "{% for k in d %}{{ k }}{% endfor %}"),
    ("for_string", "{% for c in 'añb' %}[{{ c }}]{% endfor %}"),
    ("break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("loop_scope", "{% set x = 'out' %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}"),
    ("namespace", "{% set ns = namespace(c=0, s='') %}{% for i in range(4) %}{% set ns.c = ns.c + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.c }} {{ ns.s }}"),
    ("set_tuple", "{% set a, b = 1, 'two' %}{{ a }}{{ b }}{% set c, d = [3, 4] %}{{ c + d }}"),
    ("set_block", "{% set x %}\n  inner {{ n }}\n{% endset %}[{{ x }}]{% set y | upper %}shout{% endset %}{{ y }}"),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }}"),
    ("macro_missing_arg", "{% macro m(a, b) %}[{{ a }}|{{ b }}|{{ b is defined }}]{% endmacro %}{{ m(1) }}"),
    ("macro_sees_later_globals", "{% macro m() %}{{ z }}{% endmacro %}{% set z = 5 %}{{ m() }}"),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ n }}{% endcall %}"),
    ("call_block_args", "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1, 2]) %}<{{ v }}>{% endcall %}"),
    ("filter_block", "{% filter upper %}hello {{ n }}{% endfilter %}"),
    ("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}"),
    ("operators_arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1 + 2.5 }} {{ 3 * 'ab' }} {{ [1] * 2 }} {{ 10 - 3 * 2 }}"),
    ("operators_concat", "{{ 'a' ~ 1 ~ none ~ true ~ 2.0 }} {{ 'x' + 'y' }} {{ [1] + [2] }}"),
    ("operators_compare", "{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] == [1, 2] }} {{ 2 >= 3 }} {{ 'a' != 'b' }}"),
    ("operators_logic", "{{ none or 'default' }} {{ 0 and 'x' }} {{ not [] }} {{ 'a' and 'b' }} {{ true and not false }}"),
    ("operators_in", "{{ 'ell' in 'hello' }} {{ 2 in items }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 not in items }}"),
    ("conditional_expr", "{{ 'yes' if n > 5 else 'no' }} [{{ 'x' if false }}] {{ ('a' if false) is defined }}"),
    ("tests", "{{ n is defined }} {{ nope is undefined }} {{ none is none }} {{ s is string }} {{ d is mapping }} {{ items is iterable }} {{ items is sequence }} {{ n is number }} {{ n is integer }} {{ f is float }} {{ t is boolean }} {{ n is odd }} {{ n is even }} {{ n is divisibleby 7 }} {{ t is true }} {{ t is false }} {{ 'a' is in 'abc' }} {{ n is eq 7 }} {{ 'ab' is lower }} {{ d is not string }}"),
    ("attr_vs_item", "{{ messages[0].role }} {{ messages[0]['content'] }} {{ nested.x.y[1] }} {{ nested['x']['y'][-1] }} {{ d.missing }}|{{ d['missing'] }}|{{ items[10] }}|"),
    ("slicing", "{{ items[1:] }} {{ items[:-1] }} {{ items[::-1] }} {{ items[::2] }} {{ 'abcdef'[1:4] }} {{ u[::-1] }} {{ u[1:3] }} {{ items[5:] }} {{ 'abc'[-1] }}"),
    ("literals", "{{ [1, 'a', none, true, 2.5, [3]] }} {{ {'k': 'v', 'n': 1} }} {{ (1, 2) }} {{ 'a' 'b' }} {{ \"q'\" }} {{ 'esc\\n\\t\\u00e9' }} {{ 1_000 }} {{ 1e3 }} {{ 0.1 + 0.2 }}"),
    ("float_repr", "{{ 1.0 }} {{ 0.5 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1/3 }} {{ 2.5e-7 }} {{ -0.0 }} {{ 123456789.125 }}"),
    ("print_values", "{{ none }} {{ true }} {{ d }} {{ messages[2].tool_calls }} {{ undefined_var }}|"),
    ("tojson", "{{ d | tojson }} {{ messages[2] | tojson }} {{ u | tojson }} {{ 'q\"\\\\\\n\\t\\x01' | tojson }} {{ [1.0, 2.5, none, true] | tojson }} {{ {} | tojson }} {{ [] | tojson }}"),
    ("tojson_indent", "{{ nested | tojson(indent=2) }}\n{{ [1, [2, {}], {'a': []}] | tojson(indent=4) }}"),
    ("tojson_options", "{{ u | tojson(ensure_ascii=true) }} {{ d | tojson(sort_keys=true) }} {{ nested | tojson(separators=(',', ':')) }} {{ d | tojson(true) }} {{ items | tojson(indent='\t') }} {{ d | tojson(indent=0) }} {{ {'k': u} | tojson(ensure_ascii=false) }}"),
    ("filter_trim_strip", "[{{ s | trim }}] [{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxhixx'.strip('x') }}] [{{ '\\n\\nhi\\n'.lstrip('\\n') }}] [{{ s | trim('  H') }}]"),
    ("filter_string_case", "{{ s | upper }} {{ s | lower }} {{ 'hello world' | title }} {{ 'hELLO' | capitalize }} {{ 'abc'.upper() }} {{ 'ABC'.lower() }}"),
    ("filter_length", "{{ items | length }} {{ u | length }} {{ d | count }} {{ nope | length }} {{ 'abc' | length }}"),
    ("filter_default", "{{ nope | default('dflt') }} {{ none | default('x') }} {{ '' | default('empty', true) }} {{ n | d(0) }} {{ nope | default }}|"),
    ("filter_join_map", "{{ items | join(', ') }} {{ messages | map(attribute='role') | join('/') }} {{ ['a', 'b'] | map('upper') | list }} {{ messages | join('|', attribute='role') }}"),
    ("filter_select", "{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('role', 'eq', 'tool') | map(attribute='role') | list }} {{ items | select('odd') | list }} {{ items | reject('even') | list }} {{ messages | selectattr('tool_calls') | list | length }}"),
    ("filter_select_on_falsy", "{% set tools = none %}{{ tools | selectattr('type', 'equalto', 'function') | list | length }} {{ none | select | list }} {{ none | reject('odd') | list }} {{ none | rejectattr('x') | list }} {{ none | map(attribute='x') | list }} {{ none | map('upper') | list }} {{ 0 | select | list }} {{ '' | map('upper') | list }} {{ false | selectattr('a') | list }} {{ undefined_var | select | list }} {{ none | map | list }}"),
    ("filter_select_on_truthy_non_iterable", "{{ 5 | select | list }}"),
    ("filter_first_last", "{{ items | first }} {{ items | last }} {{ 'abc' | first }} {{ items | list }} {{ 'ab' | list }}"),
    ("filter_numbers", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ '2.5' | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 7 | float }} {{ 3.9 | int }}"),
    ("filter_sort_unique", "{{ items | sort }} {{ items | sort(reverse=true) }} {{ [3, 1, 3, 2, 1] | unique | list }} {{ ['b', 'A', 'c'] | sort }} {{ messages | sort(attribute='role') | map(attribute='role') | list }} {{ items | reverse | list }} {{ 'abc' | reverse }}"),
    ("filter_dictsort_items", "{{ d | dictsort }} {{ d | items | list }} {{ d | dictsort(by='value', reverse=true) }}"),
    ("filter_batch", "{{ range(7) | batch(3) | list }} {{ range(5) | batch(2, 'x') | list }}"),
    ("filter_misc", "{{ '<a href=\"x\">&</a>' | escape }} {{ 'x' | safe }} {{ 'one two  three' | wordcount }} {{ 'a-b-c' | replace('-', '+') }} {{ 'a-b-c' | replace('-', '', 1) }} {{ items | sum }} {{ items | min }} {{ items | max }} {{ 'hi' | center(6) }}|"),
    ("filter_indent", "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb\\n' | indent(3, blank=true) }}|{{ 'x\\ny' | indent('> ') }}"),
    ("filter_format", "{{ '%s-%d-%.2f-%5s-%-4s|-%03d-%x-%%' | format('a', 7, 2.5, 'r', 'l', 5, 255) }} {{ 'v=%s' % n }} {{ '%s and %s' % ('a', 'b') }}"),
    ("str_methods", "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a.b.c'.rsplit('.', 1) }} {{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ 'aXbX'.replace('X', '-') }} {{ 'hello'.find('l') }} {{ 'hello'.count('l') }} {{ '-'.join(['a', 'b']) }} {{ '{} {}!'.format('hi', n) }} {{ '{0}{name}'.format('a', name='b') }} {{ 'abc'.title() }} {{ '12'.isdigit() }} {{ 'l1\\nl2'.splitlines() }}"),
    ("dict_methods", "{{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }} {{ d.items() | list }}"),
    ("list_methods", "{{ items.index(2) }} {{ items.count(3) }}"),
    ("globals", "{{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}"),
    ("strftime", "{{ strftime_now('%Y-%m-%d %d %b %Y') }}"),
    ("real_qwen_think_split", "{% set content = '<think>\\nreason\\n</think>\\n\\nanswer' %}{{ content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}|{{ content.split('</think>')[-1].lstrip('\\n') }}"),
    ("unicode_ops", "{{ u | upper }} {{ u[0] }} {{ u[-1] }} {{ u.split(' ') }} {{ u | length }} {{ u.strip('h😀') }}"),
    ("unicode_whitespace", "[{{ ws | trim }}] [{{ ws.strip() }}] [{{ ws.lstrip() }}] {{ ws.split() }} {{ 'a\u3000b c'.split(None, 1) }} {{ ' a b  '.split(None, 1) }} {{ ' a b  '.rsplit(None, 1) }} {{ ws | length }}"),
    ("unicode_whitespace_control", "a\u00a0 {{- 'b' -}} \u3000\nc {%- if true -%} \u2003 d{% endif %}"),
    ("undefined_semantics", "[{{ nope }}|{{ nope ~ 'x' }}|{{ nope | length }}|{{ nope | list }}|{{ nope | join(',') }}|{{ nope | trim }}|{{ nope | items | list }}|{{ 'a' in nope }}|{{ nope == none }}|{{ nope is none }}|{{ none.attr }}|{{ d.missing is defined }}|{% for x in nope %}x{% endfor %}|{{ nope | default(1) }}|{{ nope | sort }}|{{ nope | upper }}]"),
    ("error_undefined_int", "{{ nope | int }}"),
    ("error_undefined_add", "{{ nope + 1 }}"),
    ("error_undefined_item", "{{ nope[0] }}"),
    ("error_call_on_none", "{{ none.strip() }}"),
    ("error_raise_exception", "{{ raise_exception('Custom failure: ' ~ n) }}"),
    ("error_undefined_attr", "line one\n{{ nope.attr }}"),
    ("error_type_concat", "{{ 'a' + 1 }}"),
    ("error_div_zero", "{{ 1 / 0 }}"),
    ("error_unknown_filter", "{{ 1 | nosuchfilter }}"),
    ("error_syntax_unclosed", "{% if true %}never closed"),
    ("error_syntax_bad_expr", "{{ 1 + }}"),
    ("error_syntax_unknown_tag", "{% frobnicate %}"),
    ("error_mutating_method", "{% set l = [1] %}{{ l.append(2) }}"),
    ("error_not_iterable", "{% for x in 5 %}{% endfor %}"),
    ("error_set_attr_non_namespace", "{% set d2 = {} %}{% set d2.x = 1 %}"),
]


def main():
    env = jinja2_oracle.hf_environment()
    jinja2_oracle.CURRENT_NOW[0] = 1700000000
    out = []
    for name, source in FEATURES:
        entry = {"name": name, "template": source, "context": CTX}
        try:
            entry["expected"] = env.from_string(source).render(**CTX)
        except Exception as e:  # noqa: BLE001
            entry["error"] = "{}: {}".format(type(e).__name__, e)
        out.append(entry)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "feature_goldens.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote {} features to {}".format(len(out), path))


if __name__ == "__main__":
    main()
