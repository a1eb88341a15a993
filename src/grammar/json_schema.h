// JSON Schema to GBNF: the grammar of every JSON text a schema accepts (or, where a keyword can
// only be approximated, of a superset the docs name), for constrained decoding of structured
// outputs and tool arguments. The text it returns is parsed by grammar::parse_gbnf.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace recur::grammar {

struct SchemaOptions {
  // false: a keyword the compiler cannot express is an error naming it and its JSON path
  // (response_format, strict tools). true: it is left out and listed in SchemaOutput::ignored, so
  // the grammar accepts a superset (a non-strict tool's parameters: an agent's schema must not
  // fail the request).
  bool lenient = false;
};

struct SchemaOutput {
  std::string gbnf;                  // root rule: "root"
  std::vector<std::string> ignored;  // lenient only: "$.properties.a: 'uniqueItems'"
};

// Errors are kInvalidArgument, the message starting with the JSON path of the offending keyword:
// "$.properties.tags.items: 'minItems' must be a non-negative integer".
// The schema is an ordered_json: properties come out in the order the client wrote them.
Result<SchemaOutput> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                         const SchemaOptions& options = {});
// The schema as JSON text, parsed here without exceptions (invalid JSON is an error at "$").
Result<SchemaOutput> json_schema_text_to_gbnf(std::string_view schema_text,
                                              const SchemaOptions& options = {});

// Any JSON object (response_format json_object), in the same whitespace style.
std::string json_object_gbnf();

}  // namespace recur::grammar
