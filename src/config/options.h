// Parsing a subcommand's arguments and environment against the option table.
// Precedence: command line, then RECUR_* environment variable, then the table's default.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/option.h"
#include "util/status.h"

namespace recur::config {

// Looks up an environment variable; injectable so tests need not touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();

// The parsed values of one subcommand's options. Thread-compatible, cheap to copy.
class Options {
 public:
  // Accessors abort (a bug) when the name is not in the table or not in this scope.
  const Value& value(std::string_view name) const;
  bool get_bool(std::string_view name) const { return value(name).b; }
  std::int64_t get_int(std::string_view name) const { return value(name).i; }
  double get_float(std::string_view name) const { return value(name).f; }
  std::int64_t get_size_bytes(std::string_view name) const { return value(name).i; }
  std::int64_t get_duration_ms(std::string_view name) const { return value(name).i; }
  const std::string& get_string(std::string_view name) const { return value(name).s; }
  bool is_set(std::string_view name) const { return value(name).is_set; }
  bool is_auto(std::string_view name) const { return value(name).is_auto; }
  Source source(std::string_view name) const { return value(name).source; }
  // "8080 (default)", "2GiB (env RECUR_X)", "*** (cli)" for secrets: for the startup log.
  std::string describe(std::string_view name) const;

  std::uint32_t scope() const { return scope_; }
  // Arguments that are not options (none of recur's subcommands take any yet).
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend Result<Options> parse_options(std::uint32_t, const std::vector<std::string>&,
                                       const EnvLookup&);
  std::uint32_t scope_ = 0;
  std::map<std::string, Value, std::less<>> values_;
  std::vector<std::string> positional_;
};

// Parses `args` (the arguments after the subcommand) for options of `scope`.
Result<Options> parse_options(std::uint32_t scope, const std::vector<std::string>& args,
                              const EnvLookup& env);

// Parses one value as the option would (used for defaults, env and CLI alike).
Result<Value> parse_value(const OptionSpec& spec, std::string_view text);

// `--help` text for a subcommand: usage line, summary, then options grouped, each with its
// default and environment variable.
std::string render_help(std::string_view command, std::string_view summary, std::uint32_t scope);

// The whole of docs/environment-variables.md, generated from the table.
std::string render_env_markdown();

}  // namespace recur::config
