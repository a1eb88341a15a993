#include "config/options.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "config/options_table.h"

namespace recur::config {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Result<Options> parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  return parse_options(kServe, args, env_of(std::move(env)));
}

TEST(Options, DefaultsApply) {
  auto o = parse({});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->get_int("port"), 8080);
  EXPECT_EQ(o->get_string("host"), "127.0.0.1");
  EXPECT_TRUE(o->get_bool("prompt-cache"));
  EXPECT_TRUE(o->is_auto("prompt-cache-capacity-bytes"));
  EXPECT_EQ(o->get_duration_ms("prompt-cache-ttl"), 3600 * 1000);
  EXPECT_EQ(o->source("port"), Source::kDefault);
  EXPECT_FALSE(o->is_set("api-key"));
}

TEST(Options, CliBeatsEnvBeatsDefault) {
  auto o = parse({"--port", "9000"}, {{"RECUR_PORT", "7000"}, {"RECUR_PARALLEL", "8"}});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->get_int("port"), 9000);
  EXPECT_EQ(o->source("port"), Source::kCli);
  EXPECT_EQ(o->get_int("parallel"), 8);
  EXPECT_EQ(o->source("parallel"), Source::kEnv);
  EXPECT_EQ(o->get_int("max-queue"), 64);
  EXPECT_EQ(o->describe("parallel"), "8 (env RECUR_PARALLEL)");
  EXPECT_EQ(o->describe("port"), "9000 (cli)");
}

TEST(Options, FlagForms) {
  auto o = parse({"--port=81", "-m", "/models/q", "--no-prompt-cache", "--prompt-cache-warmup",
                  "off", "--ctx-size=4096", "-c2048"});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->get_int("port"), 81);
  EXPECT_EQ(o->get_string("model"), "/models/q");
  EXPECT_FALSE(o->get_bool("prompt-cache"));
  EXPECT_FALSE(o->get_bool("prompt-cache-warmup"));
  EXPECT_EQ(o->get_int("ctx-size"), 2048) << "the last occurrence wins";
}

TEST(Options, BareBooleanFlagMeansTrue) {
  auto o =
      parse({"--prompt-cache-boundary", "--port", "1"}, {{"RECUR_PROMPT_CACHE_BOUNDARY", "0"}});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_TRUE(o->get_bool("prompt-cache-boundary"));
  EXPECT_EQ(o->get_int("port"), 1);
}

TEST(Options, BooleanWords) {
  for (std::string w : {"true", "1", "yes", "on", "TRUE", "On"}) {
    auto o = parse({}, {{"RECUR_PROMPT_CACHE", w}});
    ASSERT_TRUE(o.is_ok()) << w;
    EXPECT_TRUE(o->get_bool("prompt-cache")) << w;
  }
  for (std::string w : {"false", "0", "no", "off"}) {
    auto o = parse({}, {{"RECUR_PROMPT_CACHE", w}});
    ASSERT_TRUE(o.is_ok()) << w;
    EXPECT_FALSE(o->get_bool("prompt-cache")) << w;
  }
}

TEST(Options, Sizes) {
  const std::pair<std::string, std::int64_t> cases[] = {
      {"1048576", 1048576}, {"512MiB", 512LL << 20}, {"2GiB", 2LL << 30}, {"1.5GiB", 3LL << 29},
      {"64KiB", 64 << 10},  {"1GB", 1000000000},     {"3 ", -1},  // trailing garbage
  };
  for (const auto& [text, bytes] : cases) {
    auto o = parse({"--prompt-cache-capacity-bytes", text});
    if (bytes < 0) {
      EXPECT_FALSE(o.is_ok()) << text;
      continue;
    }
    ASSERT_TRUE(o.is_ok()) << text << ": " << o.status().to_string();
    EXPECT_EQ(o->get_size_bytes("prompt-cache-capacity-bytes"), bytes) << text;
    EXPECT_FALSE(o->is_auto("prompt-cache-capacity-bytes"));
  }
}

TEST(Options, Durations) {
  const std::pair<std::string, std::int64_t> cases[] = {
      {"250ms", 250}, {"30s", 30000}, {"5m", 300000}, {"2h", 7200000}, {"45", 45000}, {"0", 0}};
  for (const auto& [text, ms] : cases) {
    auto o = parse({"--prompt-cache-ttl", text});
    ASSERT_TRUE(o.is_ok()) << text;
    EXPECT_EQ(o->get_duration_ms("prompt-cache-ttl"), ms) << text;
  }
}

// Every kind of invalid value stops parsing with one line naming the flag, the variable, the value
// and what is allowed.
TEST(Options, InvalidValuesNameFlagEnvValueAndAllowed) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::vector<std::string> must_contain;
  };
  const Case cases[] = {
      {{"--port", "abc"}, {}, {"--port", "RECUR_PORT", "'abc'", "an integer from 0 to 65535"}},
      {{"--port", "70000"}, {}, {"--port", "'70000'", "65535"}},
      {{"--port", "80.5"}, {}, {"--port", "'80.5'"}},
      {{"--prompt-cache-capacity-bytes", "0"},
       {},
       {"--prompt-cache-capacity-bytes", "RECUR_PROMPT_CACHE_CAPACITY_BYTES", "'0'",
        "a size from 1"}},
      {{"--prompt-cache-capacity-bytes", "12XB"}, {}, {"'12XB'", "512MiB"}},
      {{"--prompt-cache-ttl", "-5s"}, {}, {"--prompt-cache-ttl", "'-5s'", "duration"}},
      {{"--log-level", "loud"},
       {},
       {"--log-level", "RECUR_LOG_LEVEL", "'loud'", "one of trace|debug|info|warn|error|off"}},
      {{"--isa", "sse2"}, {}, {"--isa", "'sse2'", "amx|avx512|avx2-vnni|avx2|scalar"}},
      {{"--prompt-cache=maybe"}, {}, {"--prompt-cache", "'maybe'", "yes/no"}},
      {{},
       {{"RECUR_PARALLEL", "zero"}},
       {"environment variable RECUR_PARALLEL", "--parallel", "'zero'", "an integer from 1 to 256"}},
      {{},
       {{"RECUR_PROMPT_CACHE_SNAPSHOT_CAPACITY_BYTES", "0"}},
       {"RECUR_PROMPT_CACHE_SNAPSHOT_CAPACITY_BYTES", "'0'"}},
      {{"--port"}, {}, {"--port", "needs a value"}},
      {{"--bogus"}, {}, {"unknown option '--bogus'"}},
      {{"--family", "qwen3"}, {}, {"unknown option '--family'"}},  // make-model only
      {{"--no-port"}, {}, {"unknown option '--no-port'"}},
  };
  for (const auto& c : cases) {
    auto o = parse(c.args, c.env);
    ASSERT_FALSE(o.is_ok()) << testing::PrintToString(c.args);
    const std::string& msg = o.status().message();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const auto& part : c.must_contain) {
      EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' missing in: " << msg;
    }
  }
}

TEST(Options, BadEnvForAnotherCommandIsIgnored) {
  // RECUR_FAMILY belongs to make-model; serve must not trip over it.
  auto o = parse({}, {{"RECUR_FAMILY", "nonsense"}});
  EXPECT_TRUE(o.is_ok());
}

TEST(Options, SecretsAreNotPrintedBack) {
  auto o = parse({"--api-key", "sk-very-secret"});
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(o->get_string("api-key"), "sk-very-secret");
  EXPECT_EQ(o->describe("api-key").find("sk-very-secret"), std::string::npos);
}

TEST(Options, PositionalArgumentsAreKept) {
  auto o = parse({"--port", "1", "extra"});
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(o->positional(), std::vector<std::string>{"extra"});
}

TEST(OptionTable, WellFormed) {
  std::set<std::string_view> names;
  for (const auto& spec : all_options()) {
    EXPECT_TRUE(names.insert(spec.name).second) << "duplicate option " << spec.name;
    EXPECT_FALSE(spec.help.empty()) << spec.name;
    if (!spec.default_text.empty()) {
      EXPECT_TRUE(parse_value(spec, spec.default_text).is_ok()) << spec.name;
    }
    if (spec.type == OptionType::kEnum) {
      EXPECT_FALSE(spec.choices.empty()) << spec.name;
    }
  }
  // Short flags are unique within every scope.
  for (std::uint32_t bit = 1; bit != 0 && bit <= kMeta; bit <<= 1) {
    std::set<char> shorts;
    for (const auto& spec : all_options()) {
      if (spec.short_flag == 0 || (spec.scopes & bit) == 0) continue;
      EXPECT_TRUE(shorts.insert(spec.short_flag).second) << "-" << spec.short_flag;
    }
  }
}

TEST(Help, ShowsDefaultsAndEnvNames) {
  std::string help = render_help("serve", "Serve.", kServe);
  EXPECT_NE(help.find("--prompt-cache-snapshot-ttl TIME"), std::string::npos);
  EXPECT_NE(help.find("[env: RECUR_PROMPT_CACHE_SNAPSHOT_TTL]"), std::string::npos);
  EXPECT_NE(help.find("[default: 8080] [env: RECUR_PORT]"), std::string::npos);
  EXPECT_NE(help.find("--no-prompt-cache"), std::string::npos);
  EXPECT_EQ(help.find("--family"), std::string::npos) << "make-model options leak into serve";
}

}  // namespace
}  // namespace recur::config
