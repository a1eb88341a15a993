// The model routes: GET /v1/models and /v1/models/{id}, in OpenAI's shape, or in Anthropic's for
// Anthropic's clients (they send `anthropic-version`; Claude Code's x-api-key alone counts too).
#include <time.h>

#include <nlohmann/json.hpp>

#include "server/service.h"

namespace recur::server {

namespace {

using json = nlohmann::ordered_json;

bool anthropic_client(const HttpRequest& http) {
  return !http.header("anthropic-version").empty() ||
         (!http.header("x-api-key").empty() && http.header("authorization").empty());
}

// RFC 3339 in UTC, as Anthropic's created_at.
std::string rfc3339(std::int64_t unix_seconds) {
  const auto t = static_cast<time_t>(unix_seconds);
  tm utc{};
  gmtime_r(&t, &utc);
  char out[32];
  strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return out;
}

json openai_model(const std::string& id, std::int64_t created) {
  return json{{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "recur"}};
}

json anthropic_model(const std::string& id, std::int64_t created) {
  return json{
      {"type", "model"}, {"id", id}, {"display_name", id}, {"created_at", rfc3339(created)}};
}

}  // namespace

HttpResponse Service::models(const HttpRequest& http) const {
  const bool anthropic = anthropic_client(http);
  json data = json::array();
  for (const std::string& name : options_.models.names()) {
    data.push_back(anthropic ? anthropic_model(name, started_at_)
                             : openai_model(name, started_at_));
  }
  if (!anthropic) return HttpResponse::json(200, json{{"object", "list"}, {"data", data}}.dump());
  // Every name fits one page: has_more is false, whatever limit or cursor the client sends.
  json out = {{"data", data},
              {"has_more", false},
              {"first_id", options_.models.names().front()},
              {"last_id", options_.models.names().back()}};
  return HttpResponse::json(200, out.dump());
}

HttpResponse Service::model_by_id(const HttpRequest& http) const {
  const bool anthropic = anthropic_client(http);
  const std::string& id = http.path_id;
  if (!options_.models.resolve(id)) {
    return HttpResponse::error(unknown_model(id, options_.models),
                               anthropic ? ErrorShape::kAnthropic : ErrorShape::kOpenAI);
  }
  json model = anthropic ? anthropic_model(id, started_at_) : openai_model(id, started_at_);
  return HttpResponse::json(200, model.dump());
}

}  // namespace recur::server
