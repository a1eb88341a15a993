// Jinja chat templates rendered byte-for-byte as Hugging Face renders them (Python Jinja2 3.1,
// ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, HF's tojson,
// raise_exception and strftime_now). Not a general Jinja: no include/extends/blocks, no autoescape.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "template/value.h"
#include "util/status.h"

namespace recur::tmpl {

// What a hostile template may spend; exceeding one is an error, never a hang or a crash.
struct Limits {
  std::uint64_t max_steps = 10'000'000;             // loop iterations + calls, whole render
  int max_depth = 256;                              // nested macro calls / statements
  std::size_t max_output_bytes = 64 * 1024 * 1024;  // rendered text
};

struct RenderOptions {
  Limits limits;
  // The time strftime_now() formats (seconds since the epoch, local time); 0 = now.
  std::time_t now = 0;
};

// A parsed template; immutable and cheap to copy, safe to render from several threads.
class Template {
 public:
  // Parses `source`; syntax errors say what and where (line, column).
  static Result<Template> parse(std::string_view source);

  // Renders with `context` (a dict: messages, tools, add_generation_prompt, bos_token, ...).
  // Errors (raise_exception, undefined attributes, type errors, limits) carry line and column.
  Result<std::string> render(const Value& context, const RenderOptions& options = {}) const;

 private:
  struct Parsed;
  std::shared_ptr<const Parsed> parsed_;
};

// JSON text to a Value (objects keep their key order; ints stay ints), for contexts built from
// JSON such as messages files and tool schemas.
Result<Value> value_from_json(std::string_view json_text);

}  // namespace recur::tmpl
