#include "server/cors.h"

#include <algorithm>
#include <cctype>

namespace recur::server {

namespace {

// Chrome caps a preflight's cache at two hours (Firefox at a day): longer would be ignored.
constexpr std::string_view kMaxAgeSeconds = "7200";
constexpr std::string_view kMethods = "GET, POST, DELETE, OPTIONS";
// What the OpenAI and Anthropic SDKs send when the browser does not list the headers itself.
constexpr std::string_view kDefaultAllowedHeaders =
    "Authorization, Content-Type, x-api-key, anthropic-version, anthropic-beta, "
    "anthropic-dangerous-direct-browser-access, X-Session-Id";
// Response headers a page may read: the Anthropic message id and the overload back-off.
constexpr std::string_view kExposedHeaders = "request-id, Retry-After";

std::string_view trimmed(std::string_view s) {
  constexpr std::string_view kBlank = " \t";
  const auto first = s.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlank) - first + 1);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "http://host:port" -> "http://host"; an origin without a port is returned whole. The host may
// be an IPv6 literal in brackets, whose colons are not a port's.
std::string_view without_port(std::string_view origin) {
  const auto scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos) return origin;
  const auto colon = origin.rfind(':');
  const auto bracket = origin.rfind(']');
  if (colon <= scheme_end || (bracket != std::string_view::npos && colon < bracket)) return origin;
  return origin.substr(0, colon);
}

}  // namespace

CorsPolicy::CorsPolicy(std::string_view origins) {
  while (!origins.empty()) {
    const auto comma = origins.find(',');
    std::string entry = lower(trimmed(origins.substr(0, comma)));
    origins = comma == std::string_view::npos ? std::string_view() : origins.substr(comma + 1);
    while (!entry.empty() && entry.back() == '/') entry.pop_back();
    if (entry.empty()) continue;
    if (entry == "*") {
      any_ = true;
    } else if (entry.ends_with(":*")) {
      any_port_of_.push_back(entry.substr(0, entry.size() - 2));
    } else {
      exact_.push_back(std::move(entry));
    }
  }
}

bool CorsPolicy::allows(std::string_view origin) const {
  if (origin.empty()) return false;
  if (any_) return true;
  // Scheme and host are case-insensitive; browsers send them lower-cased already.
  const std::string o = lower(origin);
  if (std::find(exact_.begin(), exact_.end(), o) != exact_.end()) return true;
  const std::string_view host = without_port(o);
  return std::find(any_port_of_.begin(), any_port_of_.end(), host) != any_port_of_.end();
}

CorsPolicy::Headers CorsPolicy::preflight_headers(std::string_view origin,
                                                  std::string_view requested_headers) const {
  return {{"Access-Control-Allow-Origin", std::string(origin)},
          {"Access-Control-Allow-Methods", std::string(kMethods)},
          {"Access-Control-Allow-Headers",
           std::string(requested_headers.empty() ? kDefaultAllowedHeaders : requested_headers)},
          {"Access-Control-Max-Age", std::string(kMaxAgeSeconds)},
          {"Vary", "Origin, Access-Control-Request-Headers"}};
}

CorsPolicy::Headers CorsPolicy::response_headers(std::string_view origin) const {
  return {{"Access-Control-Allow-Origin", std::string(origin)},
          {"Access-Control-Expose-Headers", std::string(kExposedHeaders)},
          {"Vary", "Origin"}};
}

}  // namespace recur::server
