// The chat templates written into tokenizer_config.json, kept as data in fixtures/chat_templates/
// and compiled in (cmake/embed_files.cmake). Where they come from:
// - qwen3_5.jinja: ../shared/reference/chat-templates/Qwen3.5-4B.jinja (thinking on/off through
//   enable_thinking, past reasoning dropped), also the Qwen3.5 hybrids' and MoE models';
// - qwen3.jinja: Qwen-Qwen3-0.6B.jinja;
// - gemma3.jinja: the Gemma 3 instruction-tuned models' (google/gemma-3-1b-it and the larger ones
//   share it): a system message becomes a prefix of the first user turn, roles must alternate,
//   the assistant is "model";
// - llama3.jinja: meta-llama-Llama-3.1-8B-Instruct.jinja, which Llama 3.2 1B/3B's differs from
//   only by taking today's date from strftime_now (here the fixed "26 Jul 2024" keeps a rendered
//   prompt the same every day) and by leaving out builtin_tools (docs/model-llama.md);
// - granite4.jinja: ibm-granite-granite-4.0.jinja (tools as JSON inside <tools>, calls as
//   <tool_call>{json}</tool_call>, tool results as a user turn);
// - nemotron3.jinja: NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja (ChatML with <think>,
//   enable_thinking and truncate_history_thinking, Qwen3.5's XML tool calls);
// - falcon_h1.jinja: the ChatML form recur writes for Falcon-H1 (docs/model-falcon-h1.md: the real
//   file was not found): ChatML after <|begin_of_text|>, tools as JSON lines inside <tools> in the
//   system turn, calls as <tool_call>{json}</tool_call>, results as <tool_response> blocks in a
//   user turn (the form Qwen2.5's template writes, which recur's tool-call parser reads);
// - lfm2.jinja: LFM2.5-Instruct.jinja;
// - smollm3.jinja: HuggingFaceTB-SmolLM3-3B.jinja, which is Unsloth's edit of SmolLM3-3B's
//   template, not the one HF ships (no date line, no /system_override, no xml_tools /
//   python_tools, no generation tags, the system turn always closed: docs/model-smollm3.md).
#include "modelgen/tokenizer_gen.h"
#include "util/check.h"
#include "util/embedded_file.h"

namespace recur::modelgen {

namespace fixtures {
std::span<const EmbeddedFile> files();  // generated: build/src/modelgen/fixture_files.cc
}  // namespace fixtures

std::string chat_template(std::string_view name) {
  const std::string path = "chat_templates/" + std::string(name) + ".jinja";
  for (const EmbeddedFile& f : fixtures::files()) {
    if (f.path == path) return std::string(f.bytes);
  }
  RECUR_CHECK_MSG(false, "a chat template that src/modelgen/fixtures/chat_templates lacks");
  return {};
}

}  // namespace recur::modelgen
