// Every message shape the three APIs accept, through every generated family's real chat template
// and tokenizer: the prompt renders, every text the client sent is in it, the rendering of a turn
// is the prefix of the next turn's, and a shape the template takes as it is renders exactly as
// the raw messages do (Hugging Face's apply_chat_template).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "chat/formatter.h"
#include "modelgen/generator.h"

namespace recur::chat {
namespace {

const char* const kFamilies[] = {
    "qwen3",     "qwen3_5", "gemma3",    "llama",      "granitemoehybrid", "lfm2",   "nemotron_h",
    "falcon_h1", "mamba2",  "qwen3_moe", "qwen3_next", "lfm2_moe",         "gpt_oss"};

constexpr const char* kTools =
    R"([{"type":"function","function":{"name":"get_weather","description":"Weather.",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";

Message text(std::string role, std::string t) {
  return Message{.role = std::move(role), .content = std::move(t)};
}

Message parts(std::string role, std::vector<std::string> texts) {
  Message m{.role = std::move(role), .content_is_parts = true};
  for (auto& t : texts) m.content_parts.push_back({.text = std::move(t)});
  return m;
}

Message call(std::optional<std::string> content, std::string id = "call_1") {
  Message m{.role = "assistant", .content = std::move(content)};
  m.tool_calls.push_back(
      {.id = std::move(id), .name = "get_weather", .arguments_json = R"({"city":"Oslo"})"});
  return m;
}

Message result(Message m, std::string id = "call_1") {
  m.tool_call_id = std::move(id);
  return m;
}

struct Shape {
  std::vector<Message> messages;
  bool tools = false;
  bool prefill = false;
};

// Named shapes; each message's texts are the client's texts the rendering must show.
std::map<std::string, Shape> shapes() {
  Message reasoned = text("assistant", "Paris is the capital.");
  reasoned.reasoning_content = "The user asks about France.";
  return {
      {"user_text_parts",
       {{text("system", "Be brief."), parts("user", {"First part.", "Second part."})}}},
      {"parts_everywhere",
       {{parts("system", {"Sys one.", "Sys two."}), parts("user", {"Hello", "there"}),
         parts("assistant", {"Hi,", "how can I help?"}), text("user", "Tell me more.")}}},
      {"sdk_tool_loop",
       {{text("user", "Weather in Oslo?"), call(std::nullopt),
         result(parts("tool", {"Sunny,", "20 degrees."}))},
        true}},
      {"tool_result_then_user_text",
       {{text("user", "Weather in Oslo?"), call(""), result(text("tool", "Rainy.")),
         text("user", "And tomorrow?")},
        true}},
      {"codex_two_developers",
       {{text("developer", "You are Codex."), text("developer", "Sandbox: read-only."),
         text("user", "List the files.")}}},
      {"developer_parts", {{parts("developer", {"Rule one.", "Rule two."}), text("user", "Go.")}}},
      {"mid_conversation_system",
       {{text("system", "Be brief."), text("user", "Hello."), text("assistant", "Hi."),
         text("system", "Reminder: todo list is empty."), text("user", "Continue.")}}},
      {"system_last",
       {{text("user", "Hello."), text("assistant", "Hi."), text("user", "Next?"),
         text("system", "Late system note.")}}},
      {"empty_content", {{text("user", ""), text("assistant", ""), text("user", "Anyone?")}}},
      {"reasoning_echoed",
       {{text("user", "Capital of France?"), reasoned, text("user", "And Spain?")}}},
      {"consecutive_users", {{text("user", "One."), text("user", "Two.")}}},
      {"prefill", {{text("user", "Count to three."), text("assistant", "One, two,")}, false, true}},
  };
}

std::vector<std::string> client_texts(const Shape& s) {
  std::vector<std::string> out;
  for (const auto& m : s.messages) {
    if (m.content_is_parts) {
      for (const auto& p : m.content_parts) out.push_back(p.text);
    } else if (m.content && !m.content->empty()) {
      out.push_back(*m.content);
    }
    for (const auto& c : m.tool_calls) out.push_back(c.name);
  }
  return out;
}

class ShapesTest : public testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    root_ = (std::filesystem::temp_directory_path() /
             ("recur_shapes_test_" + std::to_string(::getpid())))
                .string();
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(root_); }

  void SetUp() override {
    const std::string dir = root_ + "/" + GetParam();
    modelgen::GenSpec spec;
    spec.family = *modelgen::parse_family(GetParam());
    ASSERT_TRUE(modelgen::write_checkpoint(spec, dir).is_ok());
    auto tok = tokenizer::Tokenizer::load_dir(dir);
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
    auto f = ChatFormatter::create(*tok_);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    fmt_ = std::make_unique<ChatFormatter>(std::move(f).value());
  }

  static ChatInputs inputs(const std::vector<Message>& msgs, const Shape& s) {
    return {.messages = msgs,
            .tools_json = s.tools ? std::string_view(kTools) : std::string_view(),
            .add_generation_prompt = !s.prefill,
            .continue_final_message = s.prefill};
  }

  static std::string root_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<ChatFormatter> fmt_;
};
std::string ShapesTest::root_;

TEST_P(ShapesTest, EveryShapeRendersWithEveryText) {
  for (const auto& [name, shape] : shapes()) {
    SCOPED_TRACE(name);
    auto p = fmt_->build_prompt(inputs(shape.messages, shape));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    for (const auto& t : client_texts(shape)) {
      EXPECT_NE(p->text.find(t), std::string::npos) << "missing '" << t << "' in\n" << p->text;
    }
    if (shape.prefill) {
      EXPECT_TRUE(p->text.ends_with("One, two,")) << p->text;
    }
  }
}

// The rendering of a conversation without the generation prompt is the start of the next
// turn's: an assistant reply and a user message (or, in a tool loop, another call and result).
TEST_P(ShapesTest, EachTurnRendersAsThePrefixOfTheNext) {
  for (const auto& [name, shape] : shapes()) {
    if (shape.prefill) continue;
    SCOPED_TRACE(name);
    auto first = fmt_->render(inputs(shape.messages, shape), false);
    ASSERT_TRUE(first.is_ok()) << first.status().to_string();
    std::vector<Message> longer = shape.messages;
    if (longer.back().role == "tool") {
      longer.push_back(call(std::nullopt, "call_2"));
      longer.push_back(result(parts("tool", {"Windy."}), "call_2"));
    } else {
      longer.push_back(text("assistant", "A reply."));
      longer.push_back(text("user", "A follow-up."));
    }
    auto second = fmt_->render(inputs(longer, shape), false);
    ASSERT_TRUE(second.is_ok()) << second.status().to_string();
    EXPECT_TRUE(second->starts_with(*first)) << *first << "\n---- is not the start of\n" << *second;
  }
}

bool unchanged(std::span<const Message> a, const std::vector<Message>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].role != b[i].role || a[i].content != b[i].content ||
        a[i].content_is_parts != b[i].content_is_parts) {
      return false;
    }
  }
  return true;
}

// What the template takes natively passes through untouched: the rendering is the raw one.
TEST_P(ShapesTest, NativeShapesRenderAsTheRawMessages) {
  int native = 0;
  for (const auto& [name, shape] : shapes()) {
    if (shape.prefill) continue;
    SCOPED_TRACE(name);
    const ChatInputs in = inputs(shape.messages, shape);
    if (!unchanged(shape.messages, normalize_messages(shape.messages, fmt_->caps()))) continue;
    ++native;
    auto raw = fmt_->render_as_given(in, true);
    ASSERT_TRUE(raw.is_ok()) << raw.status().to_string();
    EXPECT_EQ(*fmt_->render(in, true), *raw);
  }
  EXPECT_GE(native, 3) << fmt_->caps().to_string();  // at least the plain-text shapes
}

INSTANTIATE_TEST_SUITE_P(Families, ShapesTest, testing::ValuesIn(kFamilies));

// What the families' real templates can take, as detected.
TEST(ShapesCaps, DetectedOnTheRealTemplates) {
  const std::string root =
      (std::filesystem::temp_directory_path() / ("recur_shapes_caps_" + std::to_string(::getpid())))
          .string();
  auto caps = [&](const char* family) {
    modelgen::GenSpec spec;
    spec.family = *modelgen::parse_family(family);
    const std::string dir = root + "/" + family;
    EXPECT_TRUE(modelgen::write_checkpoint(spec, dir).is_ok());
    auto tok = tokenizer::Tokenizer::load_dir(dir);
    auto f = ChatFormatter::create(*tok);
    return f->caps();
  };
  // Qwen3.5: parts and null content natively; no developer, no late system message.
  TemplateCaps q35 = caps("qwen3_5");
  EXPECT_TRUE(q35.typed_content_user);
  EXPECT_TRUE(q35.null_content_with_tool_calls);
  EXPECT_FALSE(q35.developer_role);
  EXPECT_FALSE(q35.system_after_first);
  // Qwen3: strings only (content is concatenated), late system messages rendered.
  TemplateCaps q3 = caps("qwen3");
  EXPECT_FALSE(q3.typed_content_user);
  EXPECT_FALSE(q3.null_content_with_tool_calls);
  EXPECT_TRUE(q3.system_after_first);
  EXPECT_TRUE(q3.tool_calls);
  // Gemma 3: strict alternation, the system text inside the first user turn, user parts but
  // only the first part of a system message, no tool calls.
  TemplateCaps g = caps("gemma3");
  EXPECT_TRUE(g.system_role);
  EXPECT_FALSE(g.system_after_first);
  EXPECT_FALSE(g.consecutive_users);
  EXPECT_TRUE(g.typed_content_user);
  EXPECT_FALSE(g.typed_content_system);
  EXPECT_FALSE(g.tool_calls);
  // LFM2.5 prints non-string content as JSON: not typed content.
  EXPECT_FALSE(caps("lfm2").typed_content_user);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace recur::chat
