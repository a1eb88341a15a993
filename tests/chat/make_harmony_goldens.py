"""Writes (or with --check, compares) tests/chat/harmony_goldens.json: gpt-oss's chat template
rendered by Python Jinja2, set up as Hugging Face's apply_chat_template sets it up
(tests/template/jinja2_oracle.py), for conversations as recur's clients send them. Each case holds
the client's messages (what recur parses a request into: reasoning as `reasoning_content`, null
content beside calls, several calls in one message, ...) and the same conversation as gpt-oss's
template takes it (`thinking`, one call per message, text beside reasoning and a call moved into
the reasoning); formatter_harmony_test renders the first through recur's formatter and must
produce Jinja2's rendering of the second, byte for byte.

Usage: make_harmony_goldens.py [--check]"""

import copy
import json
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "template"))
import jinja2_oracle  # noqa: E402

TEMPLATE = os.path.join(SOURCE, "tests", "template", "chat_templates", "openai-gpt-oss-120b.jinja")
GOLDENS = os.path.join(HERE, "harmony_goldens.json")
NOW = 1700000000  # strftime_now's time: the test puts the formatter's date in its place

BARE_TOOLS = [{"type": "function", "function": {"name": "get_time",
                                                "parameters": {"type": "object"}}}]
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city's name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "The current time.",
        "parameters": {"type": "object", "properties": {}}}},
]


def user(text):
    return {"role": "user", "content": text}


def call(call_id, name, args):
    return {"id": call_id, "name": name, "arguments": args}


def hf_call(c):
    return {"id": c["id"], "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]}}


def assistant(content, reasoning=None, calls=None):
    m = {"role": "assistant", "content": content}
    if reasoning is not None:
        m["reasoning_content"] = reasoning
    if calls:
        m["tool_calls"] = calls
    return m


def tool(call_id, content):
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def as_hf(messages):
    """The client's messages as the template takes them when recur changes nothing but names:
    reasoning under `thinking`, calls in OpenAI's shape, null content beside calls as ""."""
    out = []
    for m in messages:
        h = copy.deepcopy(m)
        if "reasoning_content" in h:
            h["thinking"] = h.pop("reasoning_content")
        if "tool_calls" in h:
            h["tool_calls"] = [hf_call(c) for c in h["tool_calls"]]
            if h["content"] is None:
                h["content"] = ""
        out.append(h)
    return out


WEATHER = call("call_1", "get_weather", {"city": "Oslo"})
TIME = call("call_2", "get_time", {})

CASES = [
    {"name": "one_turn", "kwargs": {"reasoning_effort": "high"},
     "messages": [{"role": "system", "content": "You are terse."}, user("What is 2+2?")]},
    {"name": "no_system_default_effort", "messages": [user("Hello!")]},
    {"name": "multi_turn_drops_past_reasoning", "kwargs": {"reasoning_effort": "low"},
     "messages": [user("What is 2+2?"), assistant("4.", "Simple arithmetic."),
                  user("And 3+3?"), assistant("6.", "Again."), user("Thanks!")]},
    {"name": "tool_round_trip", "tools": True,
     "messages": [{"role": "system", "content": "Use the tools."}, user("Weather in Oslo?"),
                  assistant(None, "Need the weather tool.", [WEATHER]),
                  tool("call_1", "{\"temperature\": 20, \"sky\": \"clear\"}")]},
    {"name": "tool_call_without_reasoning", "tools": True,
     "messages": [user("Time?"), assistant("", None, [TIME]), tool("call_2", "12:00")]},
    {"name": "tool_then_final_then_user", "tools": True,
     "messages": [user("Weather in Oslo?"), assistant(None, "Need the weather.", [WEATHER]),
                  tool("call_1", "sunny"), assistant("It is sunny in Oslo.", "Got it."),
                  user("And tomorrow?")]},
    # A preamble beside reasoning and a call: the template refuses both; the text joins the
    # reasoning.
    {"name": "preamble_reasoning_and_call", "tools": True,
     "messages": [user("Weather in Oslo?"),
                  assistant("Let me check.", "Need the weather.", [WEATHER]),
                  tool("call_1", "sunny")],
     "hf": [user("Weather in Oslo?"),
            {"role": "assistant", "content": "", "thinking": "Need the weather.\n\nLet me check.",
             "tool_calls": [hf_call(WEATHER)]},
            tool("call_1", "sunny")]},
    # Several calls in one message: one message each, each followed by its result.
    {"name": "two_calls_one_message", "tools": True,
     "messages": [user("Weather and time?"), assistant(None, "Both tools.", [WEATHER, TIME]),
                  tool("call_2", "12:00"), tool("call_1", "sunny")],
     "hf": [user("Weather and time?"),
            {"role": "assistant", "content": "", "thinking": "Both tools.",
             "tool_calls": [hf_call(WEATHER)]},
            tool("call_1", "sunny"),
            {"role": "assistant", "content": "", "tool_calls": [hf_call(TIME)]},
            tool("call_2", "12:00")]},
    # Codex opens with two developer messages; the template takes only a first one.
    {"name": "two_developer_messages", "tools": True,
     "messages": [{"role": "developer", "content": "You are Codex."},
                  {"role": "developer", "content": "Sandbox: read-only."}, user("List files.")],
     "hf": [{"role": "developer", "content": "You are Codex.\n\nSandbox: read-only."},
            user("List files.")]},
    {"name": "late_system_joins_the_next_user_turn",
     "messages": [{"role": "system", "content": "Be brief."}, user("Hi."), assistant("Hello."),
                  {"role": "system", "content": "Reminder: be kind."}, user("Continue.")],
     "hf": [{"role": "system", "content": "Be brief."}, user("Hi."),
            {"role": "assistant", "content": "Hello."}, user("Reminder: be kind.\n\nContinue.")]},
    {"name": "text_parts_are_joined",
     "messages": [{"role": "user", "content": [{"type": "text", "text": "First."},
                                                {"type": "text", "text": "Second."}]}],
     "hf": [user("First.\nSecond.")]},
    # A tool without a description (optional in OpenAI's and Anthropic's APIs): the template
    # prints "// " + description, so it gets an empty one.
    {"name": "tool_without_description", "tools": "bare",
     "messages": [user("Time?")],
     "hf_tools": [{"type": "function", "function": {"name": "get_time", "description": "",
                                                    "parameters": {"type": "object"}}}]},
    # Training-style: the final assistant turn without a generation prompt shows its reasoning.
    {"name": "final_assistant_turn", "add_generation_prompt": False,
     "messages": [user("What is 2+2?"), assistant("4.", "Simple.")]},
]


def render_all():
    env = jinja2_oracle.hf_environment()
    jinja2_oracle.CURRENT_NOW[0] = NOW
    with open(TEMPLATE, encoding="utf-8", newline="") as f:
        compiled = env.from_string(f.read())
    out = []
    for case in CASES:
        agp = case.get("add_generation_prompt", True)
        context = {"messages": case.get("hf") or as_hf(case["messages"]),
                   "add_generation_prompt": agp}
        tools = BARE_TOOLS if case.get("tools") == "bare" else TOOLS if case.get("tools") else None
        if tools:
            context["tools"] = case.get("hf_tools") or tools
        context.update(case.get("kwargs", {}))
        out.append({"name": case["name"], "messages": case["messages"], "tools": tools,
                    "kwargs": case.get("kwargs"), "add_generation_prompt": agp,
                    "expected": compiled.render(**context)})
    return out


def main():
    text = json.dumps(render_all(), ensure_ascii=False, indent=1) + "\n"
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        with open(GOLDENS, encoding="utf-8") as f:
            if f.read() != text:
                print("harmony_goldens.json differs from Jinja2's renderings; rerun "
                      "tests/chat/make_harmony_goldens.py")
                return 1
        return 0
    with open(GOLDENS, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
