#include "server/responses_input_items.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <vector>

namespace recur::server {

namespace {

using json = nlohmann::ordered_json;

constexpr std::size_t kMaxLimit = 100;

// OpenAI's id prefix of an item type.
std::string_view id_prefix(const json& item) {
  const std::string type = item.value("type", "message");
  if (type == "function_call") return "fc_";
  if (type == "function_call_output") return "fco_";
  if (type == "reasoning") return "rs_";
  return "msg_";
}

// The input as a list of items, each with an id.
json items_of(std::string_view input_json, std::string_view token) {
  json input = json::parse(input_json, nullptr, false);
  json items = json::array();
  if (input.is_string()) {
    items.push_back(
        json{{"type", "message"},
             {"role", "user"},
             {"content", json::array({json{{"type", "input_text"}, {"text", input}}})}});
  } else if (input.is_array()) {
    items = std::move(input);
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    json& item = items[i];
    if (!item.is_object() || (item.contains("id") && item["id"].is_string())) continue;
    // The client's order of keys is kept; the id leads, as in OpenAI's items.
    json with_id = {{"id", fmt::format("{}{}_{}", id_prefix(item), token, i)}};
    for (auto& [k, v] : item.items()) {
      if (k != "id") with_id[k] = std::move(v);
    }
    item = std::move(with_id);
  }
  return items;
}

}  // namespace

Parsed<InputItemsQuery> parse_input_items_query(const std::map<std::string, std::string>& query) {
  InputItemsQuery q;
  if (auto it = query.find("order"); it != query.end()) {
    if (it->second != "asc" && it->second != "desc") {
      return invalid_request("order",
                             fmt::format("order must be 'asc' or 'desc', got '{}'", it->second));
    }
    q.ascending = it->second == "asc";
  }
  if (auto it = query.find("limit"); it != query.end()) {
    const std::string& s = it->second;
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || n < 1 || n > kMaxLimit) {
      return invalid_request(
          "limit", fmt::format("limit must be an integer from 1 to {}, got '{}'", kMaxLimit, s));
    }
    q.limit = n;
  }
  if (auto it = query.find("after"); it != query.end()) q.after = it->second;
  return q;
}

Parsed<std::string> input_items_page(std::string_view input_json, std::string_view token,
                                     const InputItemsQuery& query) {
  json items = items_of(input_json, token);
  std::vector<json*> ordered;
  for (auto& item : items) ordered.push_back(&item);
  if (!query.ascending) std::reverse(ordered.begin(), ordered.end());
  std::size_t start = 0;
  if (!query.after.empty()) {
    auto it = std::find_if(ordered.begin(), ordered.end(), [&](const json* item) {
      return item->is_object() && item->value("id", "") == query.after;
    });
    if (it == ordered.end()) {
      return invalid_request(
          "after", fmt::format("after: no input item '{}' in this response", query.after));
    }
    start = static_cast<std::size_t>(it - ordered.begin()) + 1;
  }
  const std::size_t end = std::min(ordered.size(), start + query.limit);
  json data = json::array();
  for (std::size_t i = start; i < end; ++i) data.push_back(std::move(*ordered[i]));
  auto id_of = [](const json& item) {
    return item.is_object() && item.contains("id") ? item["id"] : json(nullptr);
  };
  json out = {{"object", "list"},
              {"data", data},
              {"first_id", data.empty() ? json(nullptr) : id_of(data.front())},
              {"last_id", data.empty() ? json(nullptr) : id_of(data.back())},
              {"has_more", end < ordered.size()}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace recur::server
