// libFuzzer target: the JSON Schema compiler, strict and lenient, and the parser over what it
// writes. Every schema must compile to a grammar that parses, or to an error naming a path;
// never a crash, a hang or an unparsable grammar.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto schema = nlohmann::ordered_json::parse(input, nullptr, false);
  if (schema.is_discarded()) return 0;
  for (bool lenient : {false, true}) {
    auto out = recur::grammar::json_schema_to_gbnf(schema, {.lenient = lenient});
    if (!out.is_ok()) {
      RECUR_CHECK(out.status().message().starts_with("$"));
      continue;
    }
    auto g = recur::grammar::parse_gbnf(out->gbnf);
    // Left recursion through $ref is the parser's to refuse; anything else must parse.
    RECUR_CHECK(g.is_ok() || g.status().message().find("left-recursive") != std::string::npos ||
                g.status().message().find("matches no string") != std::string::npos ||
                g.status().message().find("elements") != std::string::npos);
  }
  return 0;
}
