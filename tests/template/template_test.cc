// The template engine's feature suite (small templates with outputs produced by Python Jinja2,
// feature_goldens.json), located errors, limits against hostile templates, and robustness on
// truncated real templates.
#include "template/template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "template/value.h"

namespace recur::tmpl {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::string> render(std::string_view source, const Value& context = Value::dict(),
                           const RenderOptions& options = {}) {
  RECUR_ASSIGN_OR_RETURN(Template t, Template::parse(source));
  return t.render(context, options);
}

TEST(TemplateFeatures, MatchJinja2Goldens) {
  auto goldens = nlohmann::ordered_json::parse(
      read_file(std::filesystem::path(RECUR_SOURCE_DIR) / "tests/template/feature_goldens.json"),
      nullptr, false);
  ASSERT_FALSE(goldens.is_discarded());
  ASSERT_GT(goldens.size(), 60u);
  for (const auto& g : goldens) {
    std::string name = g["name"].get<std::string>();
    auto context = value_from_json(g["context"].dump());
    ASSERT_TRUE(context.is_ok());
    RenderOptions options;
    options.now = 1700000000;
    auto out = render(g["template"].get<std::string>(), *context, options);
    if (g.contains("expected")) {
      ASSERT_TRUE(out.is_ok()) << name << ": " << out.status().message();
      EXPECT_EQ(*out, g["expected"].get<std::string>()) << name;
    } else {
      ASSERT_FALSE(out.is_ok()) << name << " rendered " << *out;
      EXPECT_NE(out.status().message().find("line "), std::string::npos) << name;
      EXPECT_NE(out.status().message().find("column "), std::string::npos) << name;
    }
  }
}

TEST(TemplateErrors, RaiseExceptionKeepsTheTemplatesMessage) {
  auto out = render("ok\n  {{ raise_exception('Conversation roles must alternate') }}");
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().message(),
            "template error at line 2, column 21: Conversation roles must alternate");
}

TEST(TemplateErrors, SyntaxErrorsSayWhatAndWhere) {
  auto a = Template::parse("line1\n{% for x in %}");
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("line 2, column 13"), std::string::npos)
      << a.status().message();
  auto b = Template::parse("{{ 'unterminated }}");
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("unterminated string"), std::string::npos);
  auto c = Template::parse("{% if x %}{% endfor %}");
  ASSERT_FALSE(c.is_ok());
  auto d = Template::parse("{# never closed");
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("comment"), std::string::npos);
}

// Found by fuzz_jinja: digit runs past int64 threw std::out_of_range out of the parser (a dotted
// index), the attribute filters (a numeric attribute path) and str.format (a field index), which
// aborted the process.
TEST(TemplateErrors, HugeIntegerIndexesAreErrorsNotCrashes) {
  auto a = Template::parse("{{ x.99999999999999999999 }}");
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("integer index out of range"), std::string::npos)
      << a.status().message();
  auto b = Template::parse("{{ 99999999999999999999 }}");
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("out of range"), std::string::npos) << b.status().message();
  // As in Jinja2, such an attribute path finds nothing.
  auto c = render(
      "{{ [[1, 2]] | map(attribute='99999999999999999999') | select('defined') | list }}"
      "|{{ [[1, 2]] | map(attribute='1') | list }}");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(*c, "[]|[2]");
  // And a format field's index (Python: replacement index out of range).
  auto d = render("{{ '{99999999999999999999999}'.format(1) }}");
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("has no value"), std::string::npos) << d.status().message();
  auto e = render("{{ '{1}{0}'.format('a', 'b') }}");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(*e, "ba");
}

TEST(TemplateErrors, UndefinedAttributeIsLocated) {
  auto out = render("a\nb {{ x.y }}");
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("line 2"), std::string::npos);
  EXPECT_NE(out.status().message().find("'x' is undefined"), std::string::npos);
}

TEST(TemplateLimits, LoopIterationsAreBounded) {
  RenderOptions options;
  options.limits.max_steps = 100000;
  auto out =
      render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
             Value::dict(), options);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("limit"), std::string::npos);
}

TEST(TemplateLimits, RecursionIsBounded) {
  auto out = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("too deep"), std::string::npos);
}

TEST(TemplateLimits, OutputSizeIsBounded) {
  RenderOptions options;
  options.limits.max_output_bytes = 1 << 20;
  auto out =
      render("{% for i in range(1000) %}{{ 'x' * 10000 }}{% endfor %}", Value::dict(), options);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("output exceeded"), std::string::npos);
}

TEST(TemplateLimits, DeepNestingIsAnErrorNotACrash) {
  EXPECT_FALSE(
      Template::parse("{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}")
          .is_ok());
  EXPECT_FALSE(Template::parse("{{ " + std::string(10000, '[') + " }}").is_ok());
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(Template::parse(ifs).is_ok());
  EXPECT_FALSE(value_from_json(std::string(100000, '[') + std::string(100000, ']')).is_ok());
}

// Found by fuzz_jinja: chains of operators, attributes, calls and filters built trees deep enough
// to overflow the stack at render time (fuzz/regressions/fuzz_jinja).
TEST(TemplateLimits, LongChainsAreAnErrorNotACrash) {
  auto chain = [](std::string_view link, int n) {
    std::string s = "{{ x";
    for (int i = 0; i < n; ++i) s += link;
    return s + " }}";
  };
  for (std::string_view link :
       {"+1", "~1", "*1", " or 1", " and 1", ".a", "[0]", "()", "|string", " if 1 else 1"}) {
    auto deep = Template::parse(chain(link, 50000));
    ASSERT_FALSE(deep.is_ok()) << link;
    EXPECT_NE(deep.status().message().find("nested too deeply"), std::string::npos) << link;
    EXPECT_TRUE(Template::parse(chain(link, 50)).is_ok()) << link;
  }
  std::string sum = "{{ 1";
  for (int i = 0; i < 150; ++i) sum += " + 1";
  auto out = render(sum + " }}");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(*out, "151");
}

TEST(TemplateLimits, DeepValuesAndSelfReferenceAreSafe) {
  auto deep = render(
      "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x | length }}");
  ASSERT_FALSE(deep.is_ok());
  EXPECT_NE(deep.status().message().find("nested deeper"), std::string::npos);
  auto cyclic =
      render("{% set ns = namespace(x=1) %}{% set ns.self = ns %}{{ ns.self.x }}{{ ns }}");
  ASSERT_TRUE(cyclic.is_ok()) << cyclic.status().message();
  EXPECT_TRUE(cyclic->starts_with("1<Namespace {'x': 1, 'self': <Namespace {'x': 1, 'self'"));
  EXPECT_FALSE(
      render("{% set ns = namespace(x=1) %}{% set ns.self = ns %}{{ ns | tojson }}").is_ok());
}

// Every prefix of every real template (at a stride) must parse or fail cleanly, and render or
// fail cleanly: a malformed template never crashes.
TEST(TemplateRobustness, TruncatedRealTemplatesFailCleanly) {
  auto context = value_from_json(
      R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true})");
  ASSERT_TRUE(context.is_ok());
  int n_parsed = 0, n_total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(RECUR_SOURCE_DIR) / "tests/template/chat_templates")) {
    std::string source = read_file(entry.path());
    for (std::size_t len = 0; len < source.size(); len += 97) {
      ++n_total;
      auto t = Template::parse(std::string_view(source).substr(0, len));
      if (!t.is_ok()) continue;
      ++n_parsed;
      (void)t->render(*context);
    }
  }
  EXPECT_GT(n_total, 1000);
  EXPECT_GT(n_parsed, 0);
}

// Fixed-seed mutations of the real templates (Jinja punctuation inserted, bytes flipped, spans
// deleted): parse and render either succeed or fail with a Status, never crash or hang.
TEST(TemplateRobustness, MutatedRealTemplatesFailCleanly) {
  auto context = value_from_json(
      R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
          {"role": "assistant", "content": "a", "tool_calls": [{"function": {"name": "f",
          "arguments": {"x": 1}}}]}, {"role": "tool", "content": "r"}],
          "tools": [{"type": "function", "function": {"name": "f"}}],
          "add_generation_prompt": true})");
  ASSERT_TRUE(context.is_ok());
  std::vector<std::string> sources;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(RECUR_SOURCE_DIR) / "tests/template/chat_templates")) {
    sources.push_back(read_file(entry.path()));
  }
  std::sort(sources.begin(), sources.end());
  static const char* kPieces[] = {"{%", "%}",     "{{",    "}}",   "{#", "#}", "(",
                                  ")",  "[",      "]",     "'",    "\"", "|",  ".",
                                  "-",  "endfor", "endif", "loop", "~",  "%"};
  std::uint64_t state = 42;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  RenderOptions options;
  options.limits.max_steps = 200000;
  int n_rendered = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string s = sources[next() % sources.size()];
    for (int k = 0; k < 3; ++k) {
      std::size_t at = next() % (s.size() + 1);
      switch (next() % 3) {
        case 0:
          s.insert(at, kPieces[next() % std::size(kPieces)]);
          break;
        case 1:
          if (at < s.size()) s[at] = static_cast<char>(next() & 0xff);
          break;
        default:
          s.erase(at, next() % 40);
      }
    }
    auto t = Template::parse(s);
    if (t.is_ok() && t->render(*context, options).is_ok()) ++n_rendered;
  }
  EXPECT_GT(n_rendered, 0);
}

TEST(TemplateValues, PythonFloatRepr) {
  EXPECT_EQ(python_float_repr(1.0), "1.0");
  EXPECT_EQ(python_float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(1e-5), "1e-05");
  EXPECT_EQ(python_float_repr(123.456), "123.456");
  EXPECT_EQ(python_float_repr(-2.5e-7), "-2.5e-07");
}

}  // namespace
}  // namespace recur::tmpl
