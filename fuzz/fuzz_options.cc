// libFuzzer target: the option parser. The first byte picks the subcommand's scope; each following
// line is one argument, or with a leading '$' one NAME=VALUE environment variable. A parse gives
// values every accessor can read, or an error.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/options.h"
#include "config/options_table.h"
#include "util/check.h"

namespace {

constexpr std::uint32_t kScopes[] = {recur::config::kServe,    recur::config::kRun,
                                     recur::config::kBench,    recur::config::kMakeModel,
                                     recur::config::kTokenize, recur::config::kTemplate,
                                     recur::config::kMeta};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint32_t scope = kScopes[data[0] % std::size(kScopes)];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.empty() && line[0] == '$') {
      std::size_t eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      env[std::string(line.substr(1, eq - 1))] = std::string(line.substr(eq + 1));
    } else {
      args.emplace_back(line);
    }
  }
  recur::config::EnvLookup lookup = [&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto opts = recur::config::parse_options(scope, args, lookup);
  if (!opts.is_ok()) {
    RECUR_CHECK(!opts.status().message().empty());
    return 0;
  }
  for (const recur::config::OptionSpec& spec : recur::config::all_options()) {
    if ((spec.scopes & scope) == 0) continue;
    const recur::config::Value& v = opts->value(spec.name);
    RECUR_CHECK(!opts->describe(spec.name).empty());
    // A value that came from the user parses again to itself (what --help and logs print back).
    if (v.is_set && !v.is_auto) {
      auto again = recur::config::parse_value(spec, v.text);
      RECUR_CHECK(again.is_ok());
      RECUR_CHECK(again->b == v.b && again->i == v.i && again->s == v.s);
    }
  }
  return 0;
}
