#include "config/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "config/options_table.h"
#include "util/check.h"

namespace recur::config {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Parses a finite decimal number that fills the whole text.
std::optional<double> parse_number(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  std::string buf(text);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(buf.c_str(), &end);
  if (end != buf.c_str() + buf.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  if (!buf.empty() && std::isspace(static_cast<unsigned char>(buf[0]))) return std::nullopt;
  return v;
}

// Splits "512MiB" into 512 and "mib".
std::pair<std::string_view, std::string> split_unit(std::string_view text) {
  size_t i = text.size();
  while (i > 0 && std::isalpha(static_cast<unsigned char>(text[i - 1]))) --i;
  return {text.substr(0, i), lower(text.substr(i))};
}

std::optional<double> size_multiplier(const std::string& unit) {
  if (unit.empty() || unit == "b") return 1.0;
  if (unit == "kib" || unit == "k") return 1024.0;
  if (unit == "mib" || unit == "m") return 1024.0 * 1024;
  if (unit == "gib" || unit == "g") return 1024.0 * 1024 * 1024;
  if (unit == "tib" || unit == "t") return 1024.0 * 1024 * 1024 * 1024;
  if (unit == "kb") return 1e3;
  if (unit == "mb") return 1e6;
  if (unit == "gb") return 1e9;
  if (unit == "tb") return 1e12;
  return std::nullopt;
}

std::optional<double> duration_ms_multiplier(const std::string& unit) {
  if (unit.empty() || unit == "s") return 1000.0;
  if (unit == "ms") return 1.0;
  if (unit == "m" || unit == "min") return 60.0 * 1000;
  if (unit == "h") return 3600.0 * 1000;
  if (unit == "d") return 24.0 * 3600 * 1000;
  return std::nullopt;
}

Status bad_value(const OptionSpec& spec, std::string_view text, std::string_view why = "") {
  return Error(StatusCode::kInvalidArgument, "invalid value '{}': expected {}{}{}", text,
               allowed_text(spec), why.empty() ? "" : "; ", why);
}

Result<Value> check_range(const OptionSpec& spec, std::string_view text, double v, Value out) {
  if (v < spec.min || v > spec.max) return bad_value(spec, text);
  out.i = static_cast<std::int64_t>(std::llround(v));
  out.f = v;
  return out;
}

}  // namespace

Result<Value> parse_value(const OptionSpec& spec, std::string_view text) {
  Value out;
  out.text = std::string(text);
  out.is_set = true;
  if (spec.allow_auto && lower(text) == "auto") {
    out.is_auto = true;
    return out;
  }
  switch (spec.type) {
    case OptionType::kBool: {
      std::string w = lower(text);
      if (w == "true" || w == "1" || w == "yes" || w == "on") {
        out.b = true;
      } else if (w == "false" || w == "0" || w == "no" || w == "off") {
        out.b = false;
      } else {
        return bad_value(spec, text);
      }
      return out;
    }
    case OptionType::kInt: {
      auto v = parse_number(text);
      if (!v || *v != std::floor(*v) || text.find_first_of(".eE") != std::string_view::npos) {
        return bad_value(spec, text);
      }
      return check_range(spec, text, *v, out);
    }
    case OptionType::kFloat: {
      auto v = parse_number(text);
      if (!v) return bad_value(spec, text);
      return check_range(spec, text, *v, out);
    }
    case OptionType::kSize: {
      auto [num, unit] = split_unit(text);
      auto v = parse_number(num);
      auto mult = size_multiplier(unit);
      if (!v || !mult || *v < 0) return bad_value(spec, text);
      return check_range(spec, text, std::floor(*v * *mult), out);
    }
    case OptionType::kDuration: {
      auto [num, unit] = split_unit(text);
      auto v = parse_number(num);
      auto mult = duration_ms_multiplier(unit);
      if (!v || !mult || *v < 0) return bad_value(spec, text);
      return check_range(spec, text, std::round(*v * *mult), out);
    }
    case OptionType::kEnum: {
      for (auto c : spec.choices) {
        if (c == text) {
          out.s = std::string(text);
          return out;
        }
      }
      return bad_value(spec, text);
    }
    case OptionType::kString:
    case OptionType::kPath:
      out.s = std::string(text);
      return out;
  }
  return bad_value(spec, text);
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

namespace {

const OptionSpec* find_long(std::string_view name, std::uint32_t scope) {
  const OptionSpec* spec = find_option(name);
  return (spec != nullptr && (spec->scopes & scope) != 0) ? spec : nullptr;
}

const OptionSpec* find_short(char c, std::uint32_t scope) {
  for (const auto& spec : all_options()) {
    if (spec.short_flag == c && (spec.scopes & scope) != 0) return &spec;
  }
  return nullptr;
}

Status flag_error(const OptionSpec& spec, const Status& why) {
  return Error(StatusCode::kInvalidArgument, "--{} (env {}): {}", spec.name, env_name(spec.name),
               why.message());
}

Status env_error(const OptionSpec& spec, const Status& why) {
  return Error(StatusCode::kInvalidArgument, "environment variable {} (option --{}): {}",
               env_name(spec.name), spec.name, why.message());
}

}  // namespace

Result<Options> parse_options(std::uint32_t scope, const std::vector<std::string>& args,
                              const EnvLookup& env) {
  Options opts;
  opts.scope_ = scope;
  std::map<std::string, std::string, std::less<>> cli;  // option name -> text (last one wins)
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      opts.positional_.insert(opts.positional_.end(), args.begin() + static_cast<long>(i) + 1,
                              args.end());
      break;
    }
    const OptionSpec* spec = nullptr;
    std::optional<std::string> inline_value;
    std::string shown = arg;
    if (arg.rfind("--", 0) == 0) {
      std::string body = arg.substr(2);
      if (auto eq = body.find('='); eq != std::string::npos) {
        inline_value = body.substr(eq + 1);
        body.resize(eq);
      }
      spec = find_long(body, scope);
      if (spec == nullptr && body.rfind("no-", 0) == 0) {
        const OptionSpec* neg = find_long(body.substr(3), scope);
        if (neg != nullptr && neg->type == OptionType::kBool) {
          if (inline_value) {
            return Error(StatusCode::kInvalidArgument, "{} takes no value", "--" + body);
          }
          cli[std::string(neg->name)] = "false";
          continue;
        }
      }
    } else if (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' &&
               !std::isdigit(static_cast<unsigned char>(arg[1]))) {
      spec = find_short(arg[1], scope);
      if (spec != nullptr && arg.size() > 2) inline_value = arg.substr(2);
    } else {
      opts.positional_.push_back(arg);
      continue;
    }
    if (spec == nullptr) {
      return Error(StatusCode::kInvalidArgument,
                   "unknown option '{}' (see --help for the options of this command)", shown);
    }
    std::string text;
    if (inline_value) {
      text = *inline_value;
    } else if (spec->type == OptionType::kBool &&
               (i + 1 >= args.size() || !parse_value(*spec, args[i + 1]).is_ok())) {
      text = "true";  // a bare boolean flag
    } else if (i + 1 < args.size()) {
      text = args[++i];
    } else {
      return Error(StatusCode::kInvalidArgument, "--{} (env {}) needs a value: expected {}",
                   spec->name, env_name(spec->name), allowed_text(*spec));
    }
    std::string& given = cli[std::string(spec->name)];
    given = spec->repeatable && !given.empty() ? given + "," + text : text;
  }

  for (const auto& spec : all_options()) {
    if ((spec.scopes & scope) == 0) continue;
    Value v;
    if (auto it = cli.find(spec.name); it != cli.end()) {
      auto parsed = parse_value(spec, it->second);
      if (!parsed) return flag_error(spec, parsed.status());
      v = std::move(parsed).value();
      v.source = Source::kCli;
    } else if (auto from_env = env(env_name(spec.name)); from_env.has_value()) {
      auto parsed = parse_value(spec, *from_env);
      if (!parsed) return env_error(spec, parsed.status());
      v = std::move(parsed).value();
      v.source = Source::kEnv;
    } else if (!spec.default_text.empty()) {
      auto parsed = parse_value(spec, spec.default_text);
      RECUR_CHECK_MSG(parsed.is_ok(), "a default in the option table does not parse");
      v = std::move(parsed).value();
      v.source = Source::kDefault;
    }
    opts.values_[std::string(spec.name)] = std::move(v);
  }
  return opts;
}

const Value& Options::value(std::string_view name) const {
  auto it = values_.find(name);
  RECUR_CHECK_MSG(
      it != values_.end(),
      fmt::format("option '{}' is not in the table or not in this command's scope", name).c_str());
  return it->second;
}

std::string Options::describe(std::string_view name) const {
  const Value& v = value(name);
  const OptionSpec* spec = find_option(name);
  std::string shown = v.is_set ? v.text : "(unset)";
  if (spec->secret && v.is_set && !v.text.empty()) shown = "***";
  std::string where = v.source == Source::kEnv ? "env " + env_name(name) : source_name(v.source);
  return fmt::format("{} ({})", shown, where);
}

}  // namespace recur::config
