// The environment as huggingface_hub reads it, and the syntax of repository ids and revisions.
#include "hub/hub_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace recur::hub {
namespace {

HubConfig config_of(const std::map<std::string, std::string>& env) {
  auto c = hub_config_from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? *c : HubConfig{};
}

TEST(HubConfig, DefaultsFollowHuggingfaceHub) {
  HubConfig c = config_of({{"HOME", "/home/u"}});
  EXPECT_EQ(c.endpoint, "https://huggingface.co");
  EXPECT_EQ(c.cache_dir, "/home/u/.cache/huggingface/hub");
  EXPECT_TRUE(c.token.empty());
  EXPECT_FALSE(c.offline);
  EXPECT_EQ(config_of({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}}).cache_dir, "/x/huggingface/hub");
  EXPECT_EQ(config_of({{"HOME", "/h"}, {"HF_HOME", "~/hf"}}).cache_dir, "/h/hf/hub");
  EXPECT_EQ(config_of({{"HF_HOME", "/a"}, {"HF_HUB_CACHE", "/b"}}).cache_dir, "/b");
  EXPECT_EQ(config_of({{"HF_HOME", "/a"}, {"HUGGINGFACE_HUB_CACHE", "/c"}}).cache_dir, "/c");
  EXPECT_EQ(config_of({{"HF_ENDPOINT", "http://127.0.0.1:9/"}}).endpoint, "http://127.0.0.1:9");
}

TEST(HubConfig, OfflineTakesHuggingfaceHubsTrueWords) {
  for (const char* v : {"1", "ON", "yes", "True"}) {
    EXPECT_TRUE(config_of({{"HF_HUB_OFFLINE", v}}).offline) << v;
  }
  for (const char* v : {"0", "off", "", "2"}) {
    EXPECT_FALSE(config_of({{"HF_HUB_OFFLINE", v}}).offline) << v;
  }
  EXPECT_TRUE(config_of({{"TRANSFORMERS_OFFLINE", "1"}}).offline);
}

TEST(HubConfig, TokenFromTheEnvironmentOrTheLoginFile) {
  EXPECT_EQ(config_of({{"HF_TOKEN", " hf_abc\n"}}).token, "hf_abc");
  EXPECT_EQ(config_of({{"HUGGING_FACE_HUB_TOKEN", "hf_old"}}).token, "hf_old");
  const auto dir = std::filesystem::temp_directory_path() / "recur_hub_token_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token") << "hf_file\n";
  HubConfig c = config_of({{"HF_HOME", dir.string()}});
  EXPECT_EQ(c.token, "hf_file");
  EXPECT_EQ(c.token_source, (dir / "token").string());
  EXPECT_EQ(config_of({{"HF_HOME", dir.string()}, {"HF_TOKEN", "hf_env"}}).token, "hf_env");
  std::filesystem::remove_all(dir);
}

TEST(HubConfig, BadTimeoutIsAnErrorNamingTheVariable) {
  auto c = hub_config_from_env([](const char* n) -> const char* {
    return std::string(n) == "HF_HUB_ETAG_TIMEOUT" ? "ten" : nullptr;
  });
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("HF_HUB_ETAG_TIMEOUT=ten"), std::string::npos);
  EXPECT_EQ(config_of({{"HF_HUB_ETAG_TIMEOUT", "3"}}).request_timeout_ms, 3000);
}

TEST(HubConfig, RepoIds) {
  for (const char* ok : {"Qwen/Qwen3.5-0.8B", "state-spaces/mamba2-130m", "a/b", "org_1/x.y"}) {
    EXPECT_TRUE(is_repo_id(ok)) << ok;
  }
  for (const char* bad : {"gpt2", "/abs/path", "./x/y", "a/b/c", "a--b/c", "a/b..c", "-a/b", "a/b.",
                          "a/", "/b", "a b/c", "../x", "a/b\n"}) {
    EXPECT_FALSE(is_repo_id(bad)) << bad;
  }
  EXPECT_FALSE(is_repo_id(std::string(50, 'a') + "/" + std::string(50, 'b')));
}

TEST(HubConfig, Revisions) {
  for (const char* ok : {"main", "v1.0", "refs/pr/1", "0123456789abcdef0123456789abcdef01234567"}) {
    EXPECT_TRUE(is_revision(ok)) << ok;
  }
  for (const char* bad : {"", "../x", "a/../b", "/main", "main/", "a//b", "a\tb"}) {
    EXPECT_FALSE(is_revision(bad)) << bad;
  }
  EXPECT_TRUE(is_commit_hash("0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
  EXPECT_FALSE(is_commit_hash("main"));
}

}  // namespace
}  // namespace recur::hub
