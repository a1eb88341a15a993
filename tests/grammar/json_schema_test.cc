// JSON Schema to GBNF: every schema's grammar is parsed by parse_gbnf and judged by accepts() on
// instances that must pass (compact and with the allowed whitespace) and ones that must not;
// errors name the JSON path and the keyword.
#include "grammar/json_schema.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace recur::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const Grammar> compile(std::string_view schema, bool lenient = false) {
  auto out = json_schema_text_to_gbnf(schema, {.lenient = lenient});
  EXPECT_TRUE(out.is_ok()) << out.status().message() << "\n" << schema;
  if (!out.is_ok()) return nullptr;
  auto g = parse_gbnf(out->gbnf);
  EXPECT_TRUE(g.is_ok()) << g.status().message() << "\n" << out->gbnf;
  return g.is_ok() ? *g : nullptr;
}

// The schema's grammar accepts each of `good` and none of `bad`.
void check(std::string_view schema, const std::vector<std::string>& good,
           const std::vector<std::string>& bad) {
  auto g = compile(schema);
  ASSERT_TRUE(g) << schema;
  for (const auto& s : good)
    EXPECT_TRUE(accepts(*g, s)) << "should accept: " << s << "\n" << schema;
  for (const auto& s : bad)
    EXPECT_FALSE(accepts(*g, s)) << "should reject: " << s << "\n" << schema;
}

std::string error_of(std::string_view schema, bool lenient = false) {
  auto out = json_schema_text_to_gbnf(schema, {.lenient = lenient});
  EXPECT_FALSE(out.is_ok()) << schema;
  if (out.is_ok()) return {};
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  return out.status().message();
}

TEST(JsonSchema, Primitives) {
  check(R"({"type":"string"})", {R"("")", R"("a b")", R"("\"\\\/\b\f\n\r\t\u00e9")", "\"é漢😀\""},
        {R"(a)", "\"a\nb\"", R"("\x")", R"("\u12")", R"( "a")", R"("a)"});
  check(R"({"type":"integer"})", {"0", "-1", "1234567890"}, {"-0", "01", "1.5", "+1", "", "1e3"});
  check(R"({"type":"number"})", {"0", "-0", "1.5", "-2.25e-3", "1E+10", "12"},
        {"01", "1.", ".5", "1e", "+1", "--1"});
  check(R"({"type":"boolean"})", {"true", "false"}, {"True", "1", "null"});
  check(R"({"type":"null"})", {"null"}, {"nul", "false"});
  check(R"({})", {"1", R"("x")", R"({"a":[1,{"b":null}]})", "[ ]", "true"}, {"", "{", "[1,]"});
  check("true", {"null", "[1, 2]"}, {"nope"});
}

TEST(JsonSchema, WhitespaceStyle) {
  const char* schema =
      R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]})";
  check(schema, {R"({"a":[1,2]})", R"({ "a" : [ 1 , 2 ] })", "{\n  \"a\":\n\t[\n  1,\n  2\n]\n}"},
        {R"( {"a":[1]})", R"({"a":[1]} )", R"({  "a":[1]})", "{\n\n\"a\":[1]}", "{\r\"a\":[1]}"});
  // 20 spaces or tabs after a newline at most.
  check(schema, {"{\n" + std::string(20, ' ') + "\"a\":[]}"},
        {"{\n" + std::string(21, ' ') + "\"a\":[]}"});
}

// The other keys of an object with named properties nest a group per character of the names: a
// 256-character name still compiles to a grammar the parser takes (the fuzzer found a 170-character
// one the parser's nesting limit refused), a longer one is an error naming the object.
TEST(JsonSchema, LongPropertyNamesBesideAdditionalProperties) {
  const std::string name(256, 'k');
  auto g = compile(R"({"type":"object","properties":{")" + name +
                   R"(":{"type":"integer"}},"additionalProperties":{"type":"integer"}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(*g, "{\"" + name + "\":1,\"other\":2}"));
  EXPECT_FALSE(accepts(*g, "{\"" + name + "\":1,\"" + name + "\":2}"));
  EXPECT_EQ(error_of(R"({"properties":{"a":{"properties":{")" + name +
                     R"(x":{}},"additionalProperties":true}}})"),
            "$.properties.a: property names longer than 256 characters cannot be told apart "
            "from additional properties");
}

TEST(JsonSchema, JsonObjectGrammar) {
  auto g = parse_gbnf(json_object_gbnf());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_TRUE(accepts(**g, R"({})"));
  EXPECT_TRUE(accepts(**g, R"({ "a": [1, "x", {"b": null}], "c": -1.5e3 })"));
  EXPECT_FALSE(accepts(**g, R"([1])"));
  EXPECT_FALSE(accepts(**g, R"("x")"));
  EXPECT_FALSE(accepts(**g, R"({"a":})"));
}

TEST(JsonSchema, ObjectsRequiredOptionalInOrder) {
  const char* schema = R"({"type":"object","properties":{
      "a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"},"d":{"type":"null"}},
      "required":["b","d"]})";
  check(schema,
        {R"({"b":"x","d":null})", R"({"a":1,"b":"x","d":null})",
         R"({"a":1,"b":"x","c":true,"d":null})", R"({"b":"x","c":false,"d":null})",
         R"({ "a": 1, "b": "x", "d": null })"},
        {R"({})", R"({"b":"x"})", R"({"d":null,"b":"x"})", R"({"b":"x","a":1,"d":null})",
         R"({"b":"x","d":null,"e":1})", R"({"a":1,"a":1,"b":"x","d":null})",
         R"({,"b":"x","d":null})"});
  // All optional: any in-order subset, the empty object included.
  check(
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}}})",
      {"{}", R"({"a":1})", R"({"b":2})", R"({"c":3})", R"({"a":1,"c":3})", R"({"a":1,"b":2,"c":3})",
       "{ }"},
      {R"({"c":3,"a":1})", R"({"a":1,})", R"({,"a":1})", R"({"x":1})"});
  // No properties, no additionalProperties: any object.
  check(R"({"type":"object"})", {"{}", R"({"x":[1],"y":{"z":null}})"}, {"[]", "null"});
  // additionalProperties false and no properties: only {}.
  check(R"({"type":"object","additionalProperties":false})", {"{}", "{ }"}, {R"({"a":1})"});
}

TEST(JsonSchema, ManyOptionalPropertiesStayLinear) {
  Json props = Json::object();
  for (int i = 0; i < 60; ++i) props["p" + std::to_string(i)] = {{"type", "integer"}};
  Json schema = {{"type", "object"}, {"properties", props}};
  auto out = json_schema_to_gbnf(schema);
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_LT(out->gbnf.size(), 20000u);
  auto g = parse_gbnf(out->gbnf);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_TRUE(accepts(**g, R"({"p3":1,"p17":2,"p59":3})"));
  EXPECT_FALSE(accepts(**g, R"({"p17":2,"p3":1})"));
}

TEST(JsonSchema, AdditionalPropertiesExcludeDeclaredNames) {
  const char* schema =
      R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"string"}},
      "additionalProperties":{"type":"boolean"}})";
  check(schema,
        {"{}", R"({"a":1})", R"({"ab":"x"})", R"({"a":1,"ab":"x","abc":true})", R"({"b":false})",
         R"({"":true})", R"({"a":1,"ac":true,"x":false})", R"({"abd":true,"aa":false})"},
        {R"({"a":true})", R"({"ab":true})", R"({"abc":1})", R"({"b":1})", R"({"ab":"x","a":1})",
         R"({"x":true,"a":1})"});
  // true: any value.
  check(
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":true})",
      {R"({"a":1})", R"({"a":1,"b":[1,{}]})"}, {R"({"b":1})", R"({"a":1,"a":2})"});
  // Names with characters that need escapes.
  check(
      R"({"type":"object","properties":{"q\"x":{"type":"integer"}},"additionalProperties":{"type":"null"}})",
      {R"({"q\"x":1})", R"({"q\"y":null})", R"({"q":null})"}, {R"({"q\"x":null})"});
}

TEST(JsonSchema, Arrays) {
  check(R"({"type":"array","items":{"type":"integer"}})", {"[]", "[1]", "[1,2,3]", "[ 1 , 2 ]"},
        {"[1,]", "[,1]", R"(["a"])", "[1 2]"});
  check(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})",
        {"[1,2]", "[1,2,3]"}, {"[]", "[1]", "[1,2,3,4]"});
  check(R"({"type":"array","maxItems":0})", {"[]"}, {"[1]"});
  check(R"({"type":"array","items":{"type":"string"},"minItems":1})", {R"(["a"])", R"(["a","b"])"},
        {"[]"});
  // Tuples: positions may run short unless minItems asks for them; items: false stops after.
  check(R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false})",
        {"[]", "[1]", R"([1,"x"])"}, {R"(["x"])", R"([1,"x",2])", R"([1,2])"});
  check(
      R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":{"type":"boolean"},"minItems":2})",
      {R"([1,"x"])", R"([1,"x",true,false])"}, {"[1]", R"([1,"x",1])"});
  check(R"({"type":"array","items":[{"type":"integer"}],"additionalItems":false})", {"[]", "[1]"},
        {"[1,2]"});
}

TEST(JsonSchema, RecursionThroughDefs) {
  const char* schema = R"({"$defs":{"node":{"type":"object","properties":{
      "value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["value","children"],"additionalProperties":false}},"$ref":"#/$defs/node"})";
  check(
      schema,
      {R"({"value":1,"children":[]})",
       R"({"value":1,"children":[{"value":2,"children":[{"value":3,"children":[]}]},{"value":4,"children":[]}]})"},
      {R"({"value":1})", R"({"value":1,"children":[{"value":2}]})",
       R"({"value":1,"children":[1]})"});
  // "#" itself and the older "definitions".
  check(
      R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["next"]})",
      {R"({"next":null})", R"({"next":{"next":{"next":null}}})"}, {R"({"next":{}})"});
  check(
      R"({"definitions":{"a~b/c":{"type":"integer"}},"type":"array","items":{"$ref":"#/definitions/a~0b~1c"}})",
      {"[1,2]"}, {R"(["x"])"});
}

TEST(JsonSchema, NullableAndUnions) {
  check(R"({"type":["string","null"]})", {R"("x")", "null"}, {"1"});
  check(R"({"type":"integer","nullable":true})", {"1", "null"}, {R"("1")"});
  check(R"({"anyOf":[{"type":"integer","minimum":0},{"type":"string","maxLength":1}]})",
        {"0", "7", R"("")", R"("z")"}, {"-1", R"("zz")", "null"});
  check(R"({"oneOf":[{"const":"a"},{"const":"b"}]})", {R"("a")", R"("b")"}, {R"("c")"});
}

// oneOf is exact only where no value can match two branches; a discriminated union through $ref
// is such a case, overlapping branches are an error (lenient: anyOf).
TEST(JsonSchema, OneOfMustBeDisjoint) {
  check(R"({"oneOf":[{"type":"string"},{"type":"integer"}]})", {R"("a")", "3"}, {"true"});
  check(
      R"({"$defs":{"cat":{"type":"object","properties":{"kind":{"const":"cat"},"lives":{"type":"integer"}},
        "required":["kind","lives"],"additionalProperties":false},
        "dog":{"type":"object","properties":{"kind":{"enum":["dog"]},"good":{"type":"boolean"}},
        "required":["kind","good"],"additionalProperties":false}},
        "oneOf":[{"$ref":"#/$defs/cat"},{"$ref":"#/$defs/dog"}]})",
      {R"({"kind":"cat","lives":9})", R"({"kind":"dog","good":true})"},
      {R"({"kind":"cat","good":true})"});
  EXPECT_EQ(error_of(R"({"properties":{"x":{"oneOf":[{"type":"integer"},{"type":"number"}]}}})")
                .substr(0, 61),
            "$.properties.x: 'oneOf' with branches one value may match twi");
  EXPECT_EQ(error_of(R"({"oneOf":[{"minimum":1},{"maximum":5}]})").substr(0, 3), "$: ");
  auto lenient = compile(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})", true);
  ASSERT_TRUE(lenient);
  EXPECT_TRUE(accepts(*lenient, "3"));
}

TEST(JsonSchema, EnumAndConst) {
  check(R"({"enum":["red",1,null,true,{"k":[1,"x"],"a":{}},[2.5,"q\"\n"]]})",
        {R"("red")", "1", "null", "true", R"({"k":[1,"x"],"a":{}})", R"([2.5,"q\"\n"])"},
        {R"("blue")", R"({"a":{},"k":[1,"x"]})", R"({ "k":[1,"x"],"a":{}})", "2"});
  check(R"({"const":{"x":1.0,"y":"é"}})", {R"({"x":1,"y":"é"})"}, {R"({"x":1.0,"y":"é"})"});
}

TEST(JsonSchema, AllOfMergesObjects) {
  check(
      R"({"$defs":{"base":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}},
      "allOf":[{"$ref":"#/$defs/base"},{"properties":{"name":{"type":"string"}},"required":["name"]}]})",
      {R"({"id":1,"name":"x"})"}, {R"({"id":1})", R"({"name":"x","id":1})"});
  // pydantic v1's single-$ref allOf.
  check(
      R"({"definitions":{"E":{"enum":["a","b"]}},"type":"object","properties":{"e":{"allOf":[{"$ref":"#/definitions/E"}],"description":"d"}},"required":["e"]})",
      {R"({"e":"a"})"}, {R"({"e":"c"})"});
}

TEST(JsonSchema, IntegerRangesExhaustive) {
  struct Range {
    std::optional<int> lo, hi;
    bool exclusive;
  };
  const std::vector<Range> ranges = {
      {12, 345, false}, {-120, 1200, false},        {-99, -7, false},           {0, 0, false},
      {-5, 5, true},    {100, std::nullopt, false}, {std::nullopt, -13, false}, {7, 10, false},
      {1, 999, false}};
  for (const auto& r : ranges) {
    Json schema = {{"type", "integer"}};
    if (r.lo) schema[r.exclusive ? "exclusiveMinimum" : "minimum"] = *r.lo;
    if (r.hi) schema[r.exclusive ? "exclusiveMaximum" : "maximum"] = *r.hi;
    auto out = json_schema_to_gbnf(schema);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    auto g = parse_gbnf(out->gbnf);
    ASSERT_TRUE(g.is_ok()) << g.status().message() << "\n" << out->gbnf;
    for (int v = -1500; v <= 1500; ++v) {
      bool in = (!r.lo || (r.exclusive ? v > *r.lo : v >= *r.lo)) &&
                (!r.hi || (r.exclusive ? v < *r.hi : v <= *r.hi));
      ASSERT_EQ(accepts(**g, std::to_string(v)), in) << schema.dump() << " v=" << v;
    }
    EXPECT_FALSE(accepts(**g, "-0"));
    EXPECT_FALSE(accepts(**g, "012"));
    EXPECT_FALSE(accepts(**g, "00"));
  }
  check(R"({"type":"integer","minimum":2.5,"maximum":4.5})", {"3", "4"}, {"2", "5"});
  check(R"({"type":"integer","minimum":3,"exclusiveMinimum":true})", {"4"}, {"3"});  // draft 4
}

TEST(JsonSchema, NumberBoundsBestEffort) {
  check(R"({"type":"number","minimum":0})", {"0", "1.5", "3e2"}, {"-1", "-0.5"});
  check(R"({"type":"number","exclusiveMaximum":0})", {"-1", "-0.5"}, {"1", "0"});
  check(R"({"type":"number","minimum":-1,"maximum":1})", {"-1", "0.5", "5"}, {"x"});  // a superset
}

TEST(JsonSchema, StringLengthCountsCharacters) {
  const char* schema = R"({"type":"string","minLength":2,"maxLength":3})";
  check(schema,
        {R"("ab")", R"("abc")", R"("\n\"")", R"("\u00e9x")", "\"éé\"", "\"😀😀😀\"", R"("a\\b")"},
        {R"("a")", R"("abcd")", R"("\n")", "\"é\"", "\"😀😀😀😀\"", R"("\n\n\n\n")"});
  check(R"({"type":"string","maxLength":0})", {R"("")"}, {R"("a")"});
  check(R"({"type":"string","minLength":20000})", {"\"" + std::string(20000, 'x') + "\""},
        {"\"" + std::string(19999, 'x') + "\""});
}

TEST(JsonSchema, Patterns) {
  check(R"({"type":"string","pattern":"^[a-z]+\\d{2}$"})", {R"("ab12")", R"("z00")"},
        {R"("ab1")", R"("AB12")", R"("ab123")", R"("12")"});
  // Unanchored sides allow anything there.
  check(R"({"type":"string","pattern":"ab"})", {R"("ab")", R"("xxab")", R"("abyy")", R"("1ab2")"},
        {R"("a")", R"("ba")"});
  check(R"({"type":"string","pattern":"^ab"})", {R"("ab")", R"("abyy")"}, {R"("xab")"});
  check(R"({"type":"string","pattern":"(?:cat|dog)s?$"})", {R"("cat")", R"("my dogs")"},
        {R"("cats!")"});
  check(R"({"type":"string","pattern":"^\\w+@\\w+\\.com$"})", {R"("a_1@b.com")"},
        {R"("a@b.org")", R"("a b@c.com")"});
  check(R"({"type":"string","pattern":"^[^\\s,]{1,3}?$"})", {R"("a")", R"("abc")", "\"é\""},
        {R"("")", R"("a b")", R"("a,")", R"("abcd")"});
  check(R"({"type":"string","pattern":"^\\d+(\\.\\d*)?$"})", {R"("1")", R"("1.")", R"("12.50")"},
        {R"("1.2.3")", R"(".5")"});
  // Characters the pattern produces are written as JSON string content.
  check(R"({"type":"string","pattern":"^a\"b\\\\c\\td$"})", {R"("a\"b\\c\td")"},
        {"\"a\"b\\c\td\"", R"("a\"b\\c	d")"});
  check(R"({"type":"string","pattern":"^.$"})", {R"("x")", R"("\t")", R"("\"")", "\"é\""},
        {R"("\n")", R"("xy")"});
  check(R"({"type":"string","pattern":"^[\\u00e0-\\u00e5]x{2,}$"})", {"\"àxx\"", "\"åxxxx\""},
        {"\"æxx\"", "\"àx\""});
  check(R"({"type":"string","pattern":"^a|b$"})", {R"("a")", R"("axx")", R"("xxb")"}, {R"("xa")"});
}

// Every day of years around the Gregorian exceptions (1600, 1700, 1900, 2000) against chrono's
// own calendar: month lengths and leap years exactly as validators check them.
TEST(JsonSchema, DateFormatKnowsTheCalendar) {
  auto out =
      json_schema_to_gbnf(nlohmann::ordered_json::parse(R"({"type":"string","format":"date"})"));
  ASSERT_TRUE(out.is_ok());
  auto g = parse_gbnf(out->gbnf);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  for (int y : {0, 4, 100, 1600, 1700, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9996}) {
    for (unsigned m = 0; m <= 13; ++m) {
      for (unsigned d = 0; d <= 32; ++d) {
        const std::string text = fmt::format("\"{:04}-{:02}-{:02}\"", y, m, d);
        const bool ok = std::chrono::year_month_day(std::chrono::year(y), std::chrono::month(m),
                                                    std::chrono::day(d))
                            .ok();
        ASSERT_EQ(accepts(**g, text), ok) << text;
      }
    }
  }
}

TEST(JsonSchema, Formats) {
  check(R"({"type":"string","format":"date"})", {R"("2024-02-29")", R"("1999-12-31")"},
        {R"("2024-13-01")", R"("2024-1-01")", R"("2024-01-32")", R"("24-01-01")"});
  check(R"({"type":"string","format":"time"})", {R"("23:59:59Z")", R"("08:00:00.123+02:00")"},
        {R"("24:00:00Z")", R"("08:00:00")", R"("8:00:00Z")", R"("12:00:60Z")"});
  check(R"({"type":"string","format":"date-time"})",
        {R"("2024-05-06T07:08:09Z")", R"("2024-05-06t07:08:09.5-05:30")"},
        {R"("2024-05-06 07:08:09Z")", R"("2024-05-06T07:08Z")"});
  check(R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
        {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
  check(R"({"type":"string","format":"email"})",
        {R"("a.b+c@example.com")", R"("x@sub.example-domain.org")"},
        {R"("a@b")", R"("@b.com")", R"("a..b@c.com")", R"("a b@c.com")", R"("a@-b.com")"});
  check(R"({"type":"string","format":"ipv4"})",
        {R"("0.0.0.0")", R"("255.255.255.255")", R"("10.1.20.199")"},
        {R"("256.1.1.1")", R"("01.1.1.1")", R"("1.1.1")"});
}

TEST(JsonSchema, AnnotationsAreIgnored) {
  check(
      R"({"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","title":"t","description":"d",
      "default":1,"examples":[1],"$comment":"c","deprecated":false,"readOnly":true,"writeOnly":false,
      "strict":true,"type":"integer"})",
      {"1"}, {R"("1")"});
}

TEST(JsonSchema, ErrorsNameThePathAndKeyword) {
  struct Case {
    const char* schema;
    const char* message_start;
  };
  const std::vector<Case> cases = {
      {R"({"type":"array","uniqueItems":true})", "$: 'uniqueItems' is not supported"},
      {R"({"type":"array","contains":{}})", "$: 'contains' is not supported"},
      {R"({"properties":{"a":{"type":"string","format":"uri"}}})",
       "$.properties.a: 'format' \"uri\""},
      {R"({"type":"object","patternProperties":{}})", "$: 'patternProperties' is not supported"},
      {R"({"type":"object","propertyNames":{}})", "$: 'propertyNames'"},
      {R"({"type":"object","dependentRequired":{}})", "$: 'dependentRequired'"},
      {R"({"type":"number","multipleOf":2})", "$: 'multipleOf'"},
      {R"({"not":{}})", "$: 'not'"},
      {R"({"if":{},"then":{}})", "$: 'if'"},
      {R"({"type":"object","properties":{"a":{"type":"object","minProperties":2}}})",
       "$.properties.a: 'minProperties'"},
      {R"({"type":"object","properties":{"tags":{"type":"array","items":{"type":"array","minItems":-1}}}})",
       "$.properties.tags.items: 'minItems' must be a non-negative integer"},
      {R"({"type":"object","required":"x"})", "$: 'required' must be an array of strings"},
      {R"({"type":"object","properties":[]})", "$: 'properties' must be an object"},
      {R"({"type":"strin"})", "$: 'type' \"strin\" is not a JSON Schema type"},
      {R"({"type":7})", "$: 'type' must be"},
      {R"j({"anyOf":[{"type":"string"},{"type":"string","pattern":"(?=a)"}]})j",
       "$.anyOf[1]: 'pattern'"},
      {R"({"type":"string","pattern":"(a)\\1"})", "$: 'pattern' uses a backreference"},
      {R"({"type":"string","pattern":"a^b"})", "$: 'pattern' '^' only at the start"},
      {R"({"type":"string","pattern":"\\bword"})", "$: 'pattern'"},
      {R"({"type":"string","pattern":"a{1,20000}"})", "$: 'pattern'"},
      {R"({"$defs":{"node":{"type":"string","maxLength":"3"}},"$ref":"#/$defs/node"})",
       "$['$defs'].node: 'maxLength' must be a non-negative integer"},
      {R"({"$ref":"#/$defs/missing"})", "$: '$ref' \"#/$defs/missing\" does not resolve"},
      {R"({"$ref":"http://example.com/s.json"})", "$: '$ref'"},
      {R"({"$ref":"#"})", "$: '$ref'"},
      {R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})",
       "$: '$ref'"},
      {"false", "$: the schema is false"},
      {R"({"properties":{"a":false}})", "$.properties.a: the schema is false"},
      {R"({"enum":[]})", "$: 'enum' must be a non-empty array"},
      {R"({"type":"integer","minimum":10,"maximum":5})", "$: no integer"},
      {R"({"type":"string","minLength":5,"maxLength":2})",
       "$: 'maxLength' is less than 'minLength'"},
      {R"({"type":"object","properties":{},"required":["a"]})", "$: 'required' names \"a\""},
      {R"({"allOf":[{"type":"object"},{"type":"string"}]})",
       "$.allOf[1]: 'allOf' merges object schemas only"},
      {R"({"type":"string","nullable":"yes"})", "$: 'nullable' must be a boolean"},
      {R"({"anyOf":[{"type":"string"}],"minimum":1})", "$: 'minimum' next to 'anyOf'"},
  };
  for (const auto& c : cases) {
    std::string m = error_of(c.schema);
    EXPECT_EQ(m.rfind(c.message_start, 0), 0u) << c.schema << "\n  got: " << m;
  }
}

TEST(JsonSchema, DeepSchemasAndHugeGrammarsAreErrors) {
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 70; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_NE(error_of(deep).find("deeper than 64"), std::string::npos);
  std::string m = error_of(R"({"type":"string","maxLength":100000000})");
  EXPECT_NE(m.find("'maxLength'"), std::string::npos) << m;
  EXPECT_FALSE(
      error_of(R"({"type":"array","items":{"type":"string","pattern":"^(a{10000}){10000}$"}})")
          .empty());
}

TEST(JsonSchema, LenientLeavesOutAndNames) {
  auto out = json_schema_text_to_gbnf(
      R"({"type":"object","properties":{"u":{"type":"string","format":"uri"},
          "t":{"type":"array","items":{"type":"string"},"uniqueItems":true}},"x-extension":1})",
      {.lenient = true});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(out->ignored, (std::vector<std::string>{"$: 'x-extension'", "$.properties.u: 'format'",
                                                    "$.properties.t: 'uniqueItems'"}));
  auto g = parse_gbnf(out->gbnf);
  ASSERT_TRUE(g.is_ok());
  EXPECT_TRUE(accepts(**g, R"({"u":"anything","t":["a","a"]})"));
  // Still errors when the schema is wrong rather than unsupported.
  EXPECT_FALSE(
      json_schema_text_to_gbnf(R"({"type":"object","required":"x"})", {.lenient = true}).is_ok());
}

// Tool schemas as Claude Code, Codex and OpenCode send them (zod-to-json-schema output and
// friends).
const char* const kBash = R"j({"type":"object","properties":{
  "command":{"type":"string","description":"The command to execute"},
  "timeout":{"type":"number","description":"Optional timeout in milliseconds (max 600000)"},
  "description":{"type":"string","description":"Clear, concise description of what this command does in 5-10 words."},
  "run_in_background":{"type":"boolean","description":"Set to true to run this command in the background."}},
  "required":["command"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"})j";
const char* const kEdit = R"j({"type":"object","properties":{
  "file_path":{"type":"string","description":"The absolute path to the file to modify"},
  "old_string":{"type":"string","description":"The text to replace"},
  "new_string":{"type":"string","description":"The text to replace it with (must be different from old_string)"},
  "replace_all":{"type":"boolean","default":false,"description":"Replace all occurences of old_string (default false)"}},
  "required":["file_path","old_string","new_string"],"additionalProperties":false,
  "$schema":"http://json-schema.org/draft-07/schema#"})j";
const char* const kTodoWrite = R"j({"type":"object","properties":{"todos":{"type":"array","items":{
  "type":"object","properties":{"content":{"type":"string","minLength":1},
  "status":{"type":"string","enum":["pending","in_progress","completed"]},
  "activeForm":{"type":"string","minLength":1}},"required":["content","status","activeForm"],
  "additionalProperties":false},"description":"The updated todo list"}},"required":["todos"],
  "additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"})j";
const char* const kCodexShell = R"j({"type":"object","properties":{
  "command":{"type":"array","items":{"type":"string"},"description":"The command to execute"},
  "workdir":{"type":"string","description":"The working directory to execute the command in"},
  "timeout_ms":{"type":"number","description":"The timeout for the command in milliseconds"},
  "with_escalated_permissions":{"type":"boolean"},"justification":{"type":"string"}},
  "required":["command"],"additionalProperties":false})j";
const char* const kWebFetch = R"j({"type":"object","properties":{
  "url":{"type":"string","format":"uri","description":"The URL to fetch content from"},
  "prompt":{"type":"string"}},"required":["url","prompt"],"additionalProperties":false,
  "$schema":"http://json-schema.org/draft-07/schema#"})j";
const char* const kOpenCodeRead = R"j({"type":"object","properties":{
  "filePath":{"type":"string","description":"The path to the file to read"},
  "offset":{"type":"number","description":"The line number to start reading from (0-based)"},
  "limit":{"type":"number","description":"The number of lines to read (defaults to 2000)"}},
  "required":["filePath"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"})j";

TEST(JsonSchema, AgentToolSchemas) {
  check(kBash,
        {R"({"command":"ls -la"})",
         R"({"command":"sleep 1","timeout":5000,"run_in_background":true})"},
        {R"({"timeout":5})", R"({"command":"x","extra":1})"});
  check(kEdit,
        {R"({"file_path":"/a.txt","old_string":"a\n\"b\"","new_string":"c"})",
         R"({"file_path":"/a","old_string":"a","new_string":"b","replace_all":true})"},
        {R"({"file_path":"/a","old_string":"a"})"});
  check(kTodoWrite,
        {R"({"todos":[]})",
         R"({"todos":[{"content":"Fix","status":"in_progress","activeForm":"Fixing"}]})"},
        {R"({"todos":[{"content":"","status":"pending","activeForm":"x"}]})",
         R"({"todos":[{"content":"a","status":"done","activeForm":"x"}]})"});
  check(kCodexShell, {R"({"command":["bash","-lc","ls"],"workdir":"/repo"})"},
        {R"({"command":"ls"})"});
  check(kOpenCodeRead, {R"({"filePath":"/x","offset":10,"limit":20})"}, {R"({"offset":1})"});
  // format "uri" is an error under strict, left out under lenient.
  EXPECT_EQ(error_of(kWebFetch).rfind("$.properties.url: 'format' \"uri\"", 0), 0u);
  auto lenient = json_schema_text_to_gbnf(kWebFetch, {.lenient = true});
  ASSERT_TRUE(lenient.is_ok());
  EXPECT_EQ(lenient->ignored, (std::vector<std::string>{"$.properties.url: 'format'"}));
}

TEST(JsonSchema, TenPropertySchemaCompilesQuickly) {
  std::string schema = R"({"type":"object","properties":{)";
  for (int i = 0; i < 10; ++i) {
    schema += (i ? "," : "") + fmt::format(R"("p{}":{{"type":"{}","description":"d"}})", i,
                                           i % 3 == 0   ? "string"
                                           : i % 3 == 1 ? "integer"
                                                        : "boolean");
  }
  schema += R"(},"required":["p0","p3","p6"],"additionalProperties":false})";
  Json parsed = Json::parse(schema);
  auto start = std::chrono::steady_clock::now();
  constexpr int kRuns = 100;
  for (int i = 0; i < kRuns; ++i) ASSERT_TRUE(json_schema_to_gbnf(parsed).is_ok());
  auto per_run = (std::chrono::steady_clock::now() - start) / kRuns;
  // Generous for a loaded CI machine and sanitizers; typically tens of microseconds.
  EXPECT_LT(std::chrono::duration_cast<std::chrono::microseconds>(per_run).count(), 5000);
}

}  // namespace
}  // namespace recur::grammar
