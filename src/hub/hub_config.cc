#include "hub/hub_config.h"

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

namespace recur::hub {

namespace {

std::string get(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v == nullptr ? std::string() : std::string(v);
}

// huggingface_hub's notion of a true environment value.
bool is_true(std::string v) {
  for (char& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

// A leading "~" is the home directory, as Python's expanduser does.
std::string expand_home(const EnvLookup& env, std::string path) {
  if (path == "~" || path.starts_with("~/")) path = get(env, "HOME") + path.substr(1);
  return path;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

Result<std::int64_t> seconds_ms(const EnvLookup& env, const char* name, std::int64_t fallback) {
  const std::string v = get(env, name);
  if (v.empty()) return fallback;
  std::int64_t secs = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
  if (ec != std::errc() || end != v.data() + v.size() || secs <= 0) {
    return Error(StatusCode::kInvalidArgument, "{}={}: not a positive whole number of seconds",
                 name, v);
  }
  return secs * 1000;
}

bool repo_part_ok(std::string_view p) {
  if (p.empty() || p.front() == '-' || p.front() == '.' || p.back() == '-' || p.back() == '.') {
    return false;
  }
  if (p.find("--") != std::string_view::npos || p.find("..") != std::string_view::npos)
    return false;
  for (char c : p) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<HubConfig> hub_config_from_env(const EnvLookup& env) {
  HubConfig c;
  std::string endpoint = get(env, "HF_ENDPOINT");
  if (!endpoint.empty()) c.endpoint = endpoint;
  while (c.endpoint.size() > 1 && c.endpoint.back() == '/') c.endpoint.pop_back();

  std::string home = get(env, "HF_HOME");
  if (home.empty()) {
    std::string xdg = get(env, "XDG_CACHE_HOME");
    home = (xdg.empty() ? get(env, "HOME") + "/.cache" : xdg) + "/huggingface";
  }
  home = expand_home(env, home);
  c.cache_dir = get(env, "HF_HUB_CACHE");
  if (c.cache_dir.empty()) c.cache_dir = get(env, "HUGGINGFACE_HUB_CACHE");  // the older name
  c.cache_dir = c.cache_dir.empty() ? home + "/hub" : expand_home(env, c.cache_dir);

  c.offline = is_true(get(env, "HF_HUB_OFFLINE")) || is_true(get(env, "TRANSFORMERS_OFFLINE"));

  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    if (!trim(get(env, name)).empty()) {
      c.token = trim(get(env, name));
      c.token_source = name;
      break;
    }
  }
  if (c.token.empty()) {
    // `huggingface-cli login` / `hf auth login` keeps the token in this file.
    std::string path = get(env, "HF_TOKEN_PATH");
    path = path.empty() ? home + "/token" : expand_home(env, path);
    std::ifstream in(path);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      if (in.bad()) return Error(StatusCode::kIo, "cannot read the Hub token file {}", path);
      c.token = trim(ss.str());
      if (!c.token.empty()) c.token_source = path;
    }
  }
  RECUR_ASSIGN_OR_RETURN(c.request_timeout_ms,
                         seconds_ms(env, "HF_HUB_ETAG_TIMEOUT", c.request_timeout_ms));
  RECUR_ASSIGN_OR_RETURN(std::int64_t stall,
                         seconds_ms(env, "HF_HUB_DOWNLOAD_TIMEOUT", c.stall_timeout_ms));
  c.stall_timeout_ms = std::max(stall, c.stall_timeout_ms);
  return c;
}

bool is_repo_id(std::string_view text) {
  if (text.size() > 96) return false;
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos || text.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  return repo_part_ok(text.substr(0, slash)) && repo_part_ok(text.substr(slash + 1));
}

bool is_revision(std::string_view text) {
  if (text.empty() || text.size() > 255 || text.front() == '/' || text.back() == '/') return false;
  if (text.find("..") != std::string_view::npos || text.find("//") != std::string_view::npos) {
    return false;
  }
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return false;
  }
  return true;
}

bool is_commit_hash(std::string_view text) {
  if (text.size() != 40) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

}  // namespace recur::hub
