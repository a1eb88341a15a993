// --served-model-name: which names a request may use and which name its response reports.
#include "server/model_names.h"

#include <gtest/gtest.h>

namespace recur::server {
namespace {

TEST(ModelNames, OneNameAnswersToItselfAndToAnEmptyModel) {
  ModelNames names("Qwen3-0.6B", "folder");
  EXPECT_EQ(names.primary(), "Qwen3-0.6B");
  EXPECT_EQ(names.resolve("Qwen3-0.6B"), "Qwen3-0.6B");
  EXPECT_EQ(names.resolve(""), "Qwen3-0.6B") << "an empty model is the primary";
  EXPECT_EQ(names.resolve("qwen3-0.6b"), std::nullopt) << "names are exact";
  EXPECT_EQ(names.resolve("claude-haiku"), std::nullopt);
  EXPECT_FALSE(names.wildcard());
}

TEST(ModelNames, SeveralNamesEchoTheOneTheRequestUsed) {
  ModelNames names(" big ,small,, big,haiku ", "folder");
  EXPECT_EQ(names.names(), (std::vector<std::string>{"big", "small", "haiku"}))
      << "blanks trimmed, empty and repeated names dropped, order kept";
  EXPECT_EQ(names.primary(), "big");
  EXPECT_EQ(names.resolve("small"), "small");
  EXPECT_EQ(names.resolve("haiku"), "haiku");
  EXPECT_EQ(names.resolve(""), "big");
  EXPECT_EQ(names.resolve("other"), std::nullopt);
  EXPECT_EQ(names.describe(), "'big', 'small', 'haiku'");
}

TEST(ModelNames, WildcardAnswersToAnyNameAndIsNeverListed) {
  ModelNames names("main,*", "folder");
  EXPECT_TRUE(names.wildcard());
  EXPECT_EQ(names.names(), (std::vector<std::string>{"main"}));
  EXPECT_EQ(names.resolve("claude-3-5-haiku-20241022"), "claude-3-5-haiku-20241022");
  EXPECT_EQ(names.resolve(""), "main");

  ModelNames only("*", "folder");
  EXPECT_EQ(only.names(), (std::vector<std::string>{"folder"})) << "the folder is the primary";
  EXPECT_EQ(only.resolve("gpt-4o"), "gpt-4o");
}

TEST(ModelNames, NoNameIsTheFallback) {
  ModelNames names("", "Qwen3-0.6B");
  EXPECT_EQ(names.names(), (std::vector<std::string>{"Qwen3-0.6B"}));
  EXPECT_EQ(ModelNames(std::string("recur")).primary(), "recur");
}

TEST(ModelNames, UnknownModelNamesWhatIsServed) {
  ApiError e = unknown_model("gpt-4o", ModelNames("a,b", "f"));
  EXPECT_EQ(e.http_status, 404);
  EXPECT_EQ(e.code, "model_not_found");
  EXPECT_EQ(e.param, "model");
  EXPECT_NE(e.message.find("'gpt-4o'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("'a', 'b'"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace recur::server
