// libFuzzer target: the Jinja lexer, parser and renderer with the sandbox limits on. The input is a
// template, optionally followed by a NUL byte and a JSON render context; every render must end
// with text or an error, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "template/template.h"
#include "util/check.h"

namespace {

// A chat context like the server's, used when the input brings none.
constexpr std::string_view kDefaultContext =
    R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi <b>"},)"
    R"({"role":"assistant","content":"Hello","reasoning_content":"think"},)"
    R"({"role":"user","content":"2+2?"}],"tools":[{"type":"function","function":{"name":"f",)"
    R"("parameters":{"type":"object"}}}],"add_generation_prompt":true,"bos_token":"<s>",)"
    R"("eos_token":"</s>"})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view source = input;
  std::string_view context_json = kDefaultContext;
  if (std::size_t nul = input.find('\0'); nul != std::string_view::npos) {
    source = input.substr(0, nul);
    context_json = input.substr(nul + 1);
  }
  auto tmpl = recur::tmpl::Template::parse(source);
  if (!tmpl.is_ok()) {
    RECUR_CHECK(!tmpl.status().message().empty());
    return 0;
  }
  auto context = recur::tmpl::value_from_json(context_json);
  if (!context.is_ok()) return 0;
  // Limits small enough that a render under the sanitizers ends well within -timeout.
  recur::tmpl::RenderOptions options;
  options.limits.max_steps = 200'000;
  options.limits.max_output_bytes = 1 << 20;
  options.now = 1'700'000'000;
  auto text = tmpl->render(*context, options);
  if (text.is_ok()) {
    RECUR_CHECK(text->size() <= options.limits.max_output_bytes);
  } else {
    RECUR_CHECK(!text.status().message().empty());
  }
  return 0;
}
