// Capability detection on small hand-written templates, and the normalisation rules: what each
// missing capability rewrites, and that appending a turn never changes the earlier messages.
#include "chat/normalize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "chat/formatter.h"
#include "modelgen/generator.h"

namespace recur::chat {
namespace {

class CapsTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ =
        (std::filesystem::temp_directory_path() / ("recur_caps_test_" + std::to_string(::getpid())))
            .string();
    modelgen::GenSpec spec;
    spec.family = modelgen::Family::kQwen3_5;
    ASSERT_TRUE(modelgen::write_checkpoint(spec, dir_).is_ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  void SetUp() override {
    auto tok = tokenizer::Tokenizer::load_dir(dir_);
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  }

  TemplateCaps caps_of(const std::string& source) {
    auto f = ChatFormatter::create(*tok_, source);
    EXPECT_TRUE(f.is_ok()) << f.status().to_string();
    return f.is_ok() ? f->caps() : TemplateCaps{};
  }

  static std::string dir_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
};
std::string CapsTest::dir_;

// Prints every role generically and content with "+": strings only.
constexpr const char* kStringOnly =
    "{%- for m in messages %}{{ '<' + m.role + '>' + m.content + '\\n' }}{%- endfor %}";

TEST_F(CapsTest, StringOnlyTemplateTakesNoPartsNoNullAndNoToolCalls) {
  TemplateCaps c = caps_of(kStringOnly);
  EXPECT_TRUE(c.system_role);
  EXPECT_TRUE(c.system_after_first);
  EXPECT_FALSE(c.developer_role);  // printed as any unknown role would be
  EXPECT_FALSE(c.typed_content_user);
  EXPECT_FALSE(c.typed_content_system);
  EXPECT_FALSE(c.tool_calls);
  EXPECT_FALSE(c.null_content_with_tool_calls);
  EXPECT_TRUE(c.consecutive_users);
  EXPECT_TRUE(c.consecutive_assistants);
}

TEST_F(CapsTest, RejectingDeveloperAndLateSystem) {
  TemplateCaps c = caps_of(
      "{%- for m in messages %}"
      "{%- if m.role == 'system' and not loop.first %}{{ raise_exception('system first') }}"
      "{%- elif m.role not in ['system', 'user', 'assistant'] %}{{ raise_exception('role') }}"
      "{%- endif %}{{ '<' + m.role + '>' + m.content }}{%- endfor %}");
  EXPECT_TRUE(c.system_role);
  EXPECT_FALSE(c.system_after_first);
  EXPECT_FALSE(c.developer_role);
}

TEST_F(CapsTest, AlternationRequired) {
  TemplateCaps c = caps_of(
      "{%- for m in messages %}"
      "{%- if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('alternate') }}"
      "{%- endif %}{{ '<' + m.role + '>' + m.content }}{%- endfor %}");
  EXPECT_FALSE(c.system_role);
  EXPECT_FALSE(c.consecutive_users);
  EXPECT_FALSE(c.consecutive_assistants);
}

// Knows developer, prints parts, null content and tool calls, in any order of roles.
constexpr const char* kCapable =
    "{%- for m in messages %}"
    "{%- if m.role == 'developer' %}<dev>"
    "{%- elif m.role in ['system', 'user', 'assistant', 'tool'] %}<{{ m.role }}>"
    "{%- else %}{{ raise_exception('role') }}{%- endif %}"
    "{%- if m.content is string %}{{ m.content }}{%- elif m.content is none %}"
    "{%- else %}{%- for p in m.content %}{{ p.text }}{%- endfor %}{%- endif %}"
    "{%- for c in m.tool_calls or [] %}<call>{{ c.function.name }}"
    "{{ c.function.arguments | tojson }}</call>{%- endfor %}{%- endfor %}";

TEST_F(CapsTest, CapableTemplate) {
  TemplateCaps c = caps_of(kCapable);
  EXPECT_TRUE(c.system_role);
  EXPECT_TRUE(c.system_after_first);
  EXPECT_TRUE(c.developer_role);
  EXPECT_TRUE(c.typed_content_system);
  EXPECT_TRUE(c.typed_content_user);
  EXPECT_TRUE(c.typed_content_assistant);
  EXPECT_TRUE(c.typed_content_tool);
  EXPECT_TRUE(c.tool_calls);
  EXPECT_TRUE(c.object_arguments);
  EXPECT_TRUE(c.null_content_with_tool_calls);
  EXPECT_TRUE(c.tool_responses);
}

TEST_F(CapsTest, StringArgumentsOnly) {
  // Concatenates the arguments: an object fails, the JSON text renders.
  TemplateCaps c = caps_of(
      "{%- for m in messages %}{{ '<' + m.role + '>' + m.content }}"
      "{%- for c in m.tool_calls or [] %}{{ '<call>' + c.function.name + c.function.arguments }}"
      "{%- endfor %}{%- endfor %}");
  EXPECT_TRUE(c.tool_calls);
  EXPECT_FALSE(c.object_arguments);
}

// Gemma 3 reads only the first part of a system message: two parts are not typed content there.
TEST_F(CapsTest, FirstPartOnlyIsNotTypedContent) {
  TemplateCaps c = caps_of(
      "{%- for m in messages %}<{{ m.role }}>"
      "{%- if m.content is string %}{{ m.content }}{%- else %}{{ m.content[0].text }}{%- endif %}"
      "{%- endfor %}");
  EXPECT_FALSE(c.typed_content_user);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// gpt-oss's template: past reasoning under `thinking`, one call per message, no text beside
// reasoning and calls, only a first system or developer message.
TEST_F(CapsTest, GptOss) {
  TemplateCaps c = caps_of(read_file(std::string(RECUR_SOURCE_DIR) +
                                     "/tests/template/chat_templates/openai-gpt-oss-120b.jinja"));
  EXPECT_TRUE(c.thinking_key);
  EXPECT_TRUE(c.system_role);
  EXPECT_FALSE(c.system_after_first);
  EXPECT_TRUE(c.developer_role);
  EXPECT_FALSE(c.developer_after_first);
  EXPECT_TRUE(c.tool_calls);
  EXPECT_TRUE(c.object_arguments);
  EXPECT_TRUE(c.tool_responses);
  EXPECT_FALSE(c.null_content_with_tool_calls);  // `"..." in message.content` fails on None
  EXPECT_FALSE(c.several_tool_calls);
  EXPECT_FALSE(c.tool_call_content_and_reasoning);
  EXPECT_FALSE(c.typed_content_user);
  EXPECT_FALSE(c.tools_without_description);
  // Qwen3's reads reasoning_content and takes everything else.
  TemplateCaps q = caps_of(read_file(std::string(RECUR_SOURCE_DIR) +
                                     "/tests/template/chat_templates/Qwen-Qwen3-0.6B.jinja"));
  EXPECT_FALSE(q.thinking_key);
  EXPECT_TRUE(q.several_tool_calls);
  EXPECT_TRUE(q.tool_call_content_and_reasoning);
  EXPECT_TRUE(q.tools_without_description);
}

Message msg(std::string role, std::string text) {
  return Message{.role = std::move(role), .content = std::move(text)};
}

Message calls(std::optional<std::string> text, std::vector<std::string> ids) {
  Message m{.role = "assistant", .content = std::move(text)};
  for (const std::string& id : ids) {
    m.tool_calls.push_back({.id = id, .name = "f_" + id, .arguments_json = "{}"});
  }
  return m;
}

Message result(std::string id, std::string text) {
  Message m = msg("tool", std::move(text));
  m.tool_call_id = std::move(id);
  return m;
}

TEST(Normalize, TextBesideReasoningAndCallsJoinsTheReasoning) {
  TemplateCaps c{.system_role = true,
                 .tool_calls = true,
                 .tool_responses = true,
                 .tool_call_content_and_reasoning = false};
  Message m = calls("I will look it up.", {"a"});
  m.reasoning_content = "Need the weather.";
  std::vector<Message> in = {msg("user", "u"), m, result("a", "sunny")};
  auto out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].reasoning_content, "Need the weather.\n\nI will look it up.");
  EXPECT_EQ(out[1].content, "");
  // Either alone is left as it is.
  m.reasoning_content = "";
  in[1] = m;
  EXPECT_EQ(normalize_messages(in, c)[1].content, "I will look it up.");
  c.tool_call_content_and_reasoning = true;
  m.reasoning_content = "r";
  in[1] = m;
  EXPECT_EQ(normalize_messages(in, c)[1].content, "I will look it up.");
}

TEST(Normalize, SeveralCallsBecomeOneMessageEachWithTheirResults) {
  TemplateCaps c{.system_role = true,
                 .tool_calls = true,
                 .tool_responses = true,
                 .consecutive_assistants = true,
                 .several_tool_calls = false};
  Message m = calls("Checking both.", {"a", "b", "c"});
  m.reasoning_content = "Three lookups.";
  std::vector<Message> in = {msg("user", "u"),  m,
                             result("b", "rb"), result("x", "rx"),
                             result("a", "ra"), msg("user", "thanks")};
  auto out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 8u);
  EXPECT_EQ(out[1].content, "Checking both.");
  EXPECT_EQ(out[1].reasoning_content, "Three lookups.");
  ASSERT_EQ(out[1].tool_calls.size(), 1u);
  EXPECT_EQ(out[1].tool_calls[0].id, "a");
  EXPECT_EQ(out[2].content, "ra");
  EXPECT_EQ(out[3].tool_calls[0].id, "b");
  EXPECT_EQ(out[3].content, "");
  EXPECT_FALSE(out[3].reasoning_content.has_value());
  EXPECT_EQ(out[4].content, "rb");
  EXPECT_EQ(out[5].tool_calls[0].id, "c");
  EXPECT_EQ(out[6].content, "rx");  // answers no call: after the last
  EXPECT_EQ(out[7].content, "thanks");
  c.several_tool_calls = true;
  EXPECT_EQ(normalize_messages(in, c).size(), in.size());
}

TEST(Normalize, ADeveloperMessageTheTemplateOnlyTakesFirst) {
  TemplateCaps c{.system_role = true,
                 .developer_role = true,
                 .consecutive_users = true,
                 .developer_after_first = false};
  // Codex: two developer messages open the conversation: one, as developer.
  std::vector<Message> in = {msg("developer", "A"), msg("developer", "B"), msg("user", "hi")};
  auto out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].role, "developer");
  EXPECT_EQ(out[0].content, "A\n\nB");
  in = {msg("system", "S"),    msg("developer", "D"),    msg("user", "hi"),
        msg("assistant", "x"), msg("developer", "late"), msg("user", "more")};
  out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].role, "system");
  EXPECT_EQ(out[0].content, "S\n\nD");
  EXPECT_EQ(out[3].content, "late\n\nmore");
  c.developer_after_first = true;
  EXPECT_EQ(normalize_messages(in, c).size(), in.size());
}

TEST(Normalize, CodexDevelopersBecomeOneSystemMessage) {
  TemplateCaps c{.system_role = true, .consecutive_users = true};
  std::vector<Message> in = {msg("developer", "A"), msg("developer", "B"), msg("user", "hi")};
  auto out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].role, "system");
  EXPECT_EQ(out[0].content, "A\n\nB");
  EXPECT_EQ(out[1].content, "hi");
}

TEST(Normalize, LateSystemGoesIntoTheNextUserMessageOrBecomesOne) {
  TemplateCaps c{.system_role = true, .consecutive_users = true, .consecutive_assistants = true};
  std::vector<Message> in = {msg("system", "S"), msg("user", "u1"), msg("assistant", "a1"),
                             msg("system", "late"), msg("user", "u2")};
  auto out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].role, "user");
  EXPECT_EQ(out[3].content, "late\n\nu2");
  in.pop_back();
  out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].role, "user");
  EXPECT_EQ(out[3].content, "late");
}

TEST(Normalize, NoSystemRoleMeansTheFirstUserTurnCarriesIt) {
  TemplateCaps c{};
  std::vector<Message> in = {msg("system", "S"), msg("user", "u"), msg("user", "v")};
  auto out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].content, "S\n\nu\n\nv");
}

TEST(Normalize, PartsNullContentToolCallsAndResults) {
  TemplateCaps c{.system_role = true};
  Message parts{.role = "user", .content_is_parts = true};
  parts.content_parts = {{.text = "a"}, {.text = "b"}};
  Message call{.role = "assistant"};
  call.tool_calls.push_back({.id = "c1", .name = "f", .arguments_json = R"({"x":1})"});
  Message result = msg("tool", "42");
  result.tool_call_id = "c1";
  std::vector<Message> in = {parts, call, result};
  auto out = normalize_messages(in, c);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].content, "a\nb");
  EXPECT_FALSE(out[0].content_is_parts);
  EXPECT_EQ(out[1].content, R"({"name": "f", "arguments": {"x":1}})");
  EXPECT_TRUE(out[1].tool_calls.empty());
  EXPECT_EQ(out[2].role, "user");
  EXPECT_EQ(out[2].content, "42");

  c.tool_calls = c.tool_responses = true;
  out = normalize_messages(in, c);
  EXPECT_EQ(out[1].content, "");  // null content made ""
  ASSERT_EQ(out[1].tool_calls.size(), 1u);
  c.null_content_with_tool_calls = c.typed_content_user = true;
  out = normalize_messages(in, c);
  EXPECT_FALSE(out[1].content.has_value());  // passed through
  EXPECT_TRUE(out[0].content_is_parts);
}

bool same(const Message& a, const Message& b) {
  if (a.role != b.role || a.content != b.content || a.content_is_parts != b.content_is_parts ||
      a.reasoning_content != b.reasoning_content || a.tool_call_id != b.tool_call_id ||
      a.tool_calls.size() != b.tool_calls.size() ||
      a.content_parts.size() != b.content_parts.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.content_parts.size(); ++i) {
    if (a.content_parts[i].text != b.content_parts[i].text) return false;
  }
  for (std::size_t i = 0; i < a.tool_calls.size(); ++i) {
    if (a.tool_calls[i].name != b.tool_calls[i].name) return false;
  }
  return true;
}

Message random_message(std::mt19937& rng, int i) {
  static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool"};
  Message m{.role = kRoles[rng() % 5]};
  const std::string text = "t" + std::to_string(i);
  if (rng() % 3 == 0) {
    m.content_is_parts = true;
    m.content_parts = {{.text = text}, {.text = text + "b"}};
  } else {
    m.content = text;
  }
  if (m.role == "assistant" && rng() % 2 == 0) {
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n; ++k) {
      m.tool_calls.push_back({.id = "c" + std::to_string(k), .name = "f", .arguments_json = "{}"});
    }
    if (rng() % 2 == 0) m.reasoning_content = "r" + std::to_string(i);
    if (rng() % 2 == 0) m.content.reset(), m.content_is_parts = false, m.content_parts.clear();
  }
  if (m.role == "tool") m.tool_call_id = "c" + std::to_string(rng() % 3);
  return m;
}

// Every combination of missing capabilities: normalising a conversation and the same
// conversation extended by an assistant reply and a user (or tool) turn agree on every message
// of the first, so the cached rendering of a turn stays the prefix of the next.
TEST(Normalize, AppendingATurnKeepsEarlierMessages) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20000; ++trial) {
    const std::uint32_t bits = rng();
    auto bit = [&](int i) { return ((bits >> i) & 1u) != 0; };
    TemplateCaps c{.system_role = bit(0),
                   .system_after_first = bit(1),
                   .developer_role = bit(2),
                   .typed_content_system = bit(3),
                   .typed_content_user = bit(4),
                   .typed_content_assistant = bit(5),
                   .typed_content_tool = bit(6),
                   .null_content_with_tool_calls = bit(7),
                   .tool_calls = bit(8),
                   .tool_responses = bit(9),
                   .consecutive_users = bit(10),
                   .consecutive_assistants = bit(11),
                   .developer_after_first = bit(12),
                   .several_tool_calls = bit(13),
                   .tool_call_content_and_reasoning = bit(14)};
    std::vector<Message> conv;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) conv.push_back(random_message(rng, i));
    conv.push_back(msg(rng() % 2 ? "user" : "tool", "last"));
    std::vector<Message> longer = conv;
    longer.push_back(msg("assistant", "reply"));
    longer.push_back(msg(rng() % 2 ? "user" : "tool", "next"));
    auto a = normalize_messages(conv, c);
    auto b = normalize_messages(longer, c);
    ASSERT_LE(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(same(a[i], b[i]))
          << "trial " << trial << " message " << i << " caps " << c.to_string();
    }
  }
}

}  // namespace
}  // namespace recur::chat
