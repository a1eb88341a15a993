// Each command's typed settings read from options parsed for that command's scope: an option name
// that is misspelt or outside the scope aborts here (RECUR_CHECK in config::Options) instead of in
// a production run; flags and environment land in the right fields; and no file of app/ but
// settings.cc reads an option by name.
#include "app/settings.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.h"
#include "config/options_table.h"
#include "model/family.h"

namespace recur::app {
namespace {

using Env = std::map<std::string, std::string>;

config::Options parse(std::uint32_t scope, const std::vector<std::string>& args,
                      const Env& env = {}) {
  auto opts = config::parse_options(scope, args,
                                    [env](const std::string& name) -> std::optional<std::string> {
                                      auto it = env.find(name);
                                      if (it == env.end()) return std::nullopt;
                                      return it->second;
                                    });
  EXPECT_TRUE(opts.is_ok()) << opts.status().to_string();
  return opts.is_ok() ? *opts : config::Options{};
}

std::uint32_t scope_of(std::string_view command) {
  for (const Command& c : all_commands()) {
    if (c.name == command) return c.scope;
  }
  ADD_FAILURE() << "no command " << command;
  return 0;
}

// What each command reads before it runs (commands.cc binds the same readers), besides the log
// settings main.cc reads for every command.
const std::map<std::string_view, std::function<void(const config::Options&)>>& readers() {
  static const std::map<std::string_view, std::function<void(const config::Options&)>> r = {
      {"serve", [](const config::Options& o) { read_serve_settings(o); }},
      {"run", [](const config::Options& o) { read_run_settings(o); }},
      {"bench", [](const config::Options& o) { read_bench_settings(o); }},
      {"make-model", [](const config::Options& o) { read_make_model_settings(o); }},
      {"quantize", [](const config::Options& o) { read_quantize_settings(o); }},
      {"tokenize", [](const config::Options& o) { read_tokenize_settings(o); }},
      {"template", [](const config::Options& o) { read_template_settings(o); }},
      {"pull", [](const config::Options& o) { read_pull_settings(o); }},
      {"version", [](const config::Options&) {}},
      {"config-doc", [](const config::Options&) {}},
  };
  return r;
}

void read_all(std::string_view command, const config::Options& opts) {
  read_log_settings(opts);
  readers().at(command)(opts);
}

TEST(Settings, EveryCommandReadsItsSettingsFromItsScope) {
  for (const Command& c : all_commands()) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(readers().contains(c.name)) << "add the command's settings reader to readers()";
    read_all(c.name, parse(c.scope, {}));
    // Every option of the scope set through the environment (to its default text, or "x" for an
    // optional text): the same names, read as given rather than defaulted.
    Env env;
    for (const config::OptionSpec& spec : config::all_options()) {
      if ((spec.scopes & c.scope) == 0) continue;
      const bool text =
          spec.type == config::OptionType::kString || spec.type == config::OptionType::kPath;
      if (!spec.default_text.empty()) {
        env[config::env_name(spec.name)] = std::string(spec.default_text);
      } else if (text) {
        env[config::env_name(spec.name)] = "x";
      }
    }
    read_all(c.name, parse(c.scope, {}, env));
  }
}

// Enum options are parsed again by their users (kernels::parse_isa, modelgen::parse_family, ...):
// every word the table allows must be one they know.
TEST(Settings, EveryEnumChoiceIsKnownToItsReader) {
  for (const Command& c : all_commands()) {
    for (const config::OptionSpec& spec : config::all_options()) {
      if ((spec.scopes & c.scope) == 0 || spec.type != config::OptionType::kEnum) continue;
      for (std::string_view choice : spec.choices) {
        SCOPED_TRACE(std::string(c.name) + " --" + std::string(spec.name) + " " +
                     std::string(choice));
        read_all(c.name, parse(c.scope, {"--" + std::string(spec.name), std::string(choice)}));
      }
    }
  }
}

TEST(Settings, ServeFlagsAndEnvironmentLandInTheirFields) {
  const ServeSettings s = read_serve_settings(
      parse(scope_of("serve"),
            {"-m", "/models/Qwen3-0.6B/", "--port", "9000", "--api-key", "k",
             "--no-prompt-cache-warmup", "--prompt-cache-capacity-bytes", "2GiB",
             "--prompt-cache-ttl", "90s", "--shutdown-grace", "3s", "--isa", "avx2", "-t", "3"},
            {{"RECUR_PARALLEL", "8"},
             {"RECUR_MAX_QUEUE", "10"},
             {"RECUR_PREFILL_CHUNK", "64"},
             {"RECUR_CTX_SIZE", "4096"},
             {"RECUR_LOG_PROMPTS", "1"}}));
  EXPECT_EQ(s.runtime.model_dir, "/models/Qwen3-0.6B/");
  EXPECT_EQ(s.runtime.isa, kernels::Isa::kAvx2);
  EXPECT_EQ(s.runtime.n_threads, 3);
  EXPECT_EQ(s.runtime.threads_or_cores(), 3);
  EXPECT_EQ(s.runtime.thread_spin, std::chrono::microseconds(1000));

  EXPECT_EQ(s.http.host, "127.0.0.1");
  EXPECT_EQ(s.http.port, 9000);
  EXPECT_EQ(s.http.api_key, "k");
  EXPECT_EQ(s.http.body_limit_bytes, std::size_t{16} << 20);
  EXPECT_EQ(s.http.worker_threads, 8 + 10 + 128) << "--http-threads 0: parallel + max-queue + 128";
  EXPECT_EQ(s.http.keep_alive_ms, 5000);
  EXPECT_EQ(s.http.read_timeout_ms, 30000);
  EXPECT_EQ(s.http.write_timeout_ms, 60000);

  EXPECT_EQ(s.service.models.primary(), "Qwen3-0.6B")
      << "the directory's name, trailing slash or not";
  EXPECT_TRUE(s.service.log_prompts);

  EXPECT_EQ(s.engine.parallel, 8);
  EXPECT_EQ(s.engine.max_queue, 10);
  EXPECT_EQ(s.engine.prefill_chunk, 64);
  EXPECT_EQ(s.engine.ctx_size, 4096);

  const cache::CacheSettings& c = s.prompt_cache.cache;
  EXPECT_TRUE(c.enabled);
  EXPECT_FALSE(c.warmup);
  EXPECT_TRUE(c.boundary);
  EXPECT_EQ(c.capacity_bytes, std::int64_t{2} << 30);
  EXPECT_EQ(c.max_entries, std::nullopt) << "auto";
  EXPECT_EQ(c.snapshot_capacity_bytes, std::nullopt) << "auto";
  EXPECT_EQ(c.ttl_ns, std::int64_t{90} * 1'000'000'000);
  EXPECT_EQ(c.snapshot_ttl_ns, std::int64_t{3600} * 1'000'000'000);
  EXPECT_EQ(c.min_prefix_tokens, 16);
  EXPECT_EQ(c.block_tokens, 1);
  EXPECT_EQ(s.prompt_cache.described.enabled, "true (default)");
  EXPECT_EQ(s.prompt_cache.described.capacity_bytes, "2GiB (cli)");
  EXPECT_EQ(s.prompt_cache.described.max_entries, "auto (default)");
  EXPECT_EQ(s.prompt_cache.described.ttl, "90s (cli)");

  EXPECT_EQ(s.shutdown_grace, std::chrono::milliseconds(3000));
}

TEST(Settings, ServeDefaults) {
  const ServeSettings s = read_serve_settings(parse(scope_of("serve"), {}));
  EXPECT_EQ(s.runtime.model_dir, "");
  EXPECT_EQ(s.runtime.isa, kernels::Isa::kAuto);
  EXPECT_EQ(s.runtime.n_threads, 0);
  EXPECT_GE(s.runtime.threads_or_cores(), 1);
  EXPECT_EQ(s.service.models.primary(), "recur");
  EXPECT_EQ(s.http.port, 8080);
  EXPECT_EQ(s.http.worker_threads, 8 + 64 + 128);
  EXPECT_EQ(s.engine.parallel, 8);
  EXPECT_EQ(s.engine.prefill_chunk, 256);
  EXPECT_EQ(s.engine.step_tokens, 64);
  EXPECT_TRUE(s.prompt_cache.cache.shared);
  EXPECT_EQ(s.engine.ctx_size, 0) << "0: the model's trained context, resolved once it is loaded";
  EXPECT_TRUE(s.prompt_cache.cache.warmup);
  EXPECT_EQ(s.prompt_cache.cache.capacity_bytes, std::nullopt);
  EXPECT_EQ(s.shutdown_grace, std::chrono::milliseconds(10000));

  const ServeSettings named =
      read_serve_settings(parse(scope_of("serve"), {"-m", "/m/dir", "--served-model-name", "chat",
                                                    "--http-threads", "7", "--no-prompt-cache"}));
  EXPECT_EQ(named.service.models.primary(), "chat");
  EXPECT_FALSE(named.service.models.wildcard());

  // Several names: a comma list, the flag repeated (its values add up), `*` for any name.
  const ServeSettings several = read_serve_settings(
      parse(scope_of("serve"), {"-m", "/m/dir", "--served-model-name", "big, small",
                                "--served-model-name", "*", "--served-model-name=haiku"}));
  EXPECT_EQ(several.service.models.names(), (std::vector<std::string>{"big", "small", "haiku"}));
  EXPECT_TRUE(several.service.models.wildcard());
  const ServeSettings any =
      read_serve_settings(parse(scope_of("serve"), {"-m", "/m/dir", "--served-model-name", "*"}));
  EXPECT_EQ(any.service.models.names(), (std::vector<std::string>{"dir"}))
      << "only the wildcard: the folder's name is the primary";
  EXPECT_TRUE(any.service.models.wildcard());
  EXPECT_EQ(named.http.worker_threads, 7);
  EXPECT_FALSE(named.prompt_cache.cache.enabled);
  EXPECT_EQ(named.prompt_cache.described.enabled, "false (cli)");
}

TEST(Settings, RunFlagsLandInTheirFields) {
  const RunSettings s = read_run_settings(
      parse(scope_of("run"), {"-m", "/m", "-p", "hi", "--chat", "-n", "7", "--temperature", "0.5",
                              "--top-k", "40", "--top-p", "0.9", "-s", "42", "-c", "1024"}));
  EXPECT_EQ(s.runtime.model_dir, "/m");
  EXPECT_EQ(s.prompt, "hi");
  EXPECT_TRUE(s.chat);
  EXPECT_EQ(s.max_tokens, 7);
  EXPECT_FLOAT_EQ(s.sampling.temperature, 0.5f);
  EXPECT_EQ(s.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(s.sampling.top_p, 0.9f);
  EXPECT_EQ(s.sampling.seed, 42u);
  EXPECT_EQ(s.engine.parallel, 1);
  EXPECT_EQ(s.engine.max_queue, 1);
  EXPECT_EQ(s.engine.prefill_chunk, 256);
  EXPECT_EQ(s.engine.ctx_size, 1024);

  const RunSettings d = read_run_settings(parse(scope_of("run"), {}));
  EXPECT_EQ(d.max_tokens, 128);
  EXPECT_FLOAT_EQ(d.sampling.temperature, 0.0f) << "greedy by default";
  EXPECT_FALSE(d.chat);
}

TEST(Settings, BenchFlagsLandInTheirFields) {
  const BenchSettings d = read_bench_settings(parse(scope_of("bench"), {}));
  EXPECT_DOUBLE_EQ(d.probe_seconds, 1.0);
  EXPECT_EQ(d.prompt_lengths, "128,512,2048");
  EXPECT_EQ(d.prefix_lengths, "0");
  EXPECT_EQ(d.sequence_counts, "1,4");
  EXPECT_EQ(d.context_tokens, 64);
  EXPECT_EQ(d.quantizations, "");

  const BenchSettings s = read_bench_settings(
      parse(scope_of("bench"), {"--bench-prompts", "16", "--bench-seconds", "0.5"},
            {{"RECUR_BENCH_CONTEXT", "300"},
             {"RECUR_THREAD_SPIN", "0"},
             {"RECUR_BENCH_QUANTIZE", "none,q4"}}));
  EXPECT_EQ(s.quantizations, "none,q4");
  EXPECT_EQ(s.prompt_lengths, "16");
  EXPECT_DOUBLE_EQ(s.probe_seconds, 0.5);
  EXPECT_EQ(s.context_tokens, 300);
  EXPECT_EQ(s.runtime.thread_spin, std::chrono::microseconds(0));
}

// --family and --preset offer exactly what modelgen's family records hold, so a family added
// there and not here (or the other way) fails here, not in a user's shell.
TEST(Settings, FamilyAndPresetChoicesAreTheFamilyRecords) {
  std::set<std::string_view> families, presets = {"tiny"};
  for (const modelgen::FamilyRecord& r : modelgen::family_records()) {
    families.insert(r.word);
    presets.insert(r.presets.begin(), r.presets.end());
  }
  const config::OptionSpec* family = config::find_option("family");
  const config::OptionSpec* preset = config::find_option("preset");
  ASSERT_TRUE(family != nullptr && preset != nullptr);
  EXPECT_EQ(std::set<std::string_view>(family->choices.begin(), family->choices.end()), families);
  EXPECT_EQ(std::set<std::string_view>(preset->choices.begin(), preset->choices.end()), presets);
  for (const modelgen::FamilyRecord& r : modelgen::family_records()) {
    EXPECT_EQ(modelgen::parse_family(r.word), r.family) << r.word;
    EXPECT_STREQ(modelgen::family_name(r.family), std::string(r.word).c_str());
  }
  EXPECT_EQ(modelgen::family_of_preset("tiny-bias"), modelgen::Family::kLlama) << "the first row";
  EXPECT_EQ(modelgen::family_of_preset("tiny"), std::nullopt);
  for (const modelgen::FamilyRecord& r : modelgen::family_records()) {
    EXPECT_NE(model::family_for_type(r.model_type), nullptr) << r.model_type << " loads";
  }
}

TEST(Settings, MakeModelFamilyFollowsThePresetUnlessGiven) {
  const std::uint32_t scope = scope_of("make-model");
  const MakeModelSettings d = read_make_model_settings(parse(scope, {}));
  EXPECT_EQ(d.out_dir, "");
  EXPECT_EQ(d.spec.family, modelgen::Family::kQwen3_5);
  EXPECT_EQ(d.spec.preset, "tiny");
  EXPECT_EQ(d.spec.dtype, modelgen::DType::kBF16);

  const MakeModelSettings s = read_make_model_settings(
      parse(scope, {"-o", "/out", "--preset", "qwen3-0.6b", "--dtype", "f32", "-s", "9", "--shards",
                    "2", "--layers", "3", "--hidden-size", "64", "--vocab-size", "500"}));
  EXPECT_EQ(s.out_dir, "/out");
  EXPECT_EQ(s.spec.family, modelgen::Family::kQwen3) << "the preset's family";
  EXPECT_EQ(s.spec.dtype, modelgen::DType::kF32);
  EXPECT_EQ(s.spec.seed, 9u);
  EXPECT_EQ(s.spec.shards, 2);
  EXPECT_EQ(s.spec.layers, 3);
  EXPECT_EQ(s.spec.hidden_size, 64);
  EXPECT_EQ(s.spec.vocab_size, 500);

  EXPECT_EQ(read_make_model_settings(parse(scope, {"--preset", "qwen3-0.6b", "--family", "mamba2"}))
                .spec.family,
            modelgen::Family::kMamba2)
      << "a given family wins";
  EXPECT_EQ(read_make_model_settings(
                parse(scope, {"--preset", "mamba2-130m"}, {{"RECUR_FAMILY", "qwen3_5"}}))
                .spec.family,
            modelgen::Family::kQwen3_5)
      << "the environment counts as given";
}

TEST(Settings, TokenizeTemplateAndLog) {
  const TokenizeSettings t = read_tokenize_settings(parse(scope_of("tokenize"), {"-m", "/t"}));
  EXPECT_EQ(t.model_dir, "/t");
  EXPECT_FALSE(t.decode);
  EXPECT_TRUE(read_tokenize_settings(parse(scope_of("tokenize"), {"--decode"})).decode);

  const TemplateSettings d = read_template_settings(parse(scope_of("template"), {}));
  EXPECT_TRUE(d.generation_prompt);
  EXPECT_EQ(d.kwargs_json, "");
  const TemplateSettings s = read_template_settings(
      parse(scope_of("template"), {"-m", "/t", "--messages", "chat.json", "--no-generation-prompt",
                                   "--kwargs", R"({"enable_thinking": false})"}));
  EXPECT_EQ(s.model_dir, "/t");
  EXPECT_EQ(s.messages_path, "chat.json");
  EXPECT_FALSE(s.generation_prompt);
  EXPECT_EQ(s.kwargs_json, R"({"enable_thinking": false})");

  EXPECT_EQ(read_log_settings(parse(scope_of("version"), {})).level, log::Level::kInfo);
  EXPECT_EQ(read_log_settings(parse(scope_of("serve"), {"--log-level", "debug"})).level,
            log::Level::kDebug);
  EXPECT_EQ(read_log_settings(parse(scope_of("run"), {}, {{"RECUR_LOG_LEVEL", "off"}})).level,
            log::Level::kOff);
}

// Options are read by name only in settings.cc; the commands, the runtime and the cache setup use
// the typed fields.
// Whether `line` calls one of config::Options' by-name accessors. (Plain substring search: GCC 12
// warns inside std::regex under the sanitizer build, where warnings are errors.)
bool reads_option_by_name(const std::string& line) {
  for (std::string_view call :
       {"get_bool(", "get_int(", "get_float(", "get_string(", "get_size_bytes(", "get_duration_ms(",
        "is_set(", "is_auto(", "describe("}) {
    for (std::size_t at = line.find(call); at != std::string::npos; at = line.find(call, at + 1)) {
      const bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) ||
                                           line[at - 1] == '_');
      if (word_start) return true;
    }
  }
  return line.find(".source(") != std::string::npos || line.find(".value(\"") != std::string::npos;
}

TEST(Settings, OnlySettingsReadsOptionsByName) {
  EXPECT_TRUE(reads_option_by_name("  const auto& m = opts.get_string(\"model\");"));
  EXPECT_FALSE(reads_option_by_name("  forget_string(x);"));
  const std::filesystem::path app = std::filesystem::path(RECUR_SOURCE_DIR) / "src" / "app";
  int n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(app)) {
    const std::string name = entry.path().filename().string();
    if (name == "settings.cc" || !(name.ends_with(".cc") || name.ends_with(".h"))) continue;
    ++n_files;
    std::ifstream in(entry.path());
    std::string line;
    for (int line_no = 1; std::getline(in, line); ++line_no) {
      EXPECT_FALSE(reads_option_by_name(line))
          << "src/app/" << name << ":" << line_no << " reads an option by name; add a field to "
          << "its settings struct (app/settings.h) instead: " << line;
    }
  }
  EXPECT_GT(n_files, 5);
}

}  // namespace
}  // namespace recur::app
