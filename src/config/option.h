// The option table's types: one OptionSpec per knob, parsed values with their source. Every knob of
// every subcommand is declared once in options_table.cc; flags, environment fallback, validation,
// --help and docs/environment-variables.md all come from that one declaration.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace recur::config {

enum class OptionType : std::uint8_t {
  kBool,      // true/false/1/0/yes/no/on/off; a bare flag means true; --no-NAME means false
  kInt,       // decimal integer within [min, max]
  kFloat,     // decimal number within [min, max]
  kSize,      // bytes: 1048576, 512KiB, 512MiB, 2GiB, 1TiB (also kB/MB/GB, powers of 1000)
  kDuration,  // 250ms, 30s, 5m, 2h, or plain seconds; stored as milliseconds
  kEnum,      // one word of `choices`
  kString,    // any text
  kPath,      // a file or directory path (not checked here: the user of the value reports)
};

// Which subcommands take an option (a bit set).
enum Scope : std::uint32_t {
  kServe = 1u << 0,
  kRun = 1u << 1,
  kBench = 1u << 2,
  kMakeModel = 1u << 3,
  kTokenize = 1u << 4,
  kTemplate = 1u << 5,
  kMeta = 1u << 6,  // version, config-doc: only the general options
  kQuantize = 1u << 7,
  kPull = 1u << 8,
  kAllScopes = 0xffffffffu,
};

struct OptionSpec {
  std::string_view name;  // "prompt-cache-ttl": flag --prompt-cache-ttl, env RECUR_PROMPT_CACHE_TTL
  OptionType type;
  std::string_view default_text;  // parsed like user input; "" = unset (optional value)
  std::string_view help;
  std::uint32_t scopes = kAllScopes;
  std::string_view group = "general";
  double min = 0;  // inclusive bounds for kInt/kFloat/kSize/kDuration (duration in ms)
  double max = 0;
  std::vector<std::string_view> choices = {};  // kEnum words
  char short_flag = 0;                         // e.g. 'm' for -m
  bool allow_auto = false;  // "auto" is accepted: the value is picked at run time (model-aware)
  bool secret = false;      // never printed back (api keys)
  // A comma-separated list: the flag may be given several times, its values joined with commas.
  bool repeatable = false;
};

enum class Source : std::uint8_t { kDefault, kEnv, kCli };
const char* source_name(Source s);

struct Value {
  Source source = Source::kDefault;
  std::string text;      // as given (empty when unset)
  bool is_set = false;   // false for an optional option nobody set
  bool is_auto = false;  // "auto" given where allow_auto
  bool b = false;
  std::int64_t i = 0;  // kInt, kSize (bytes), kDuration (ms)
  double f = 0;
  std::string s;  // kEnum, kString, kPath
};

std::string env_name(std::string_view option_name);
const char* type_name(OptionType t);
// What the type accepts, for error messages and docs ("an integer from 1 to 65535").
std::string allowed_text(const OptionSpec& spec);

}  // namespace recur::config
