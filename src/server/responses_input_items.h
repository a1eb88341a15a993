// GET /v1/responses/{id}/input_items: a stored response's input items as OpenAI lists them,
// `{"object": "list", "data", "first_id", "last_id", "has_more"}`, paged by `order`, `limit` and
// `after`. The items are the request's `input` as the client sent it (a string input is one user
// message); an item sent without an `id` gets one made of the response's token and its position,
// the same on every read. Pure functions over the stored JSON text.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "server/api_error.h"

namespace recur::server {

struct InputItemsQuery {
  bool ascending = false;  // order=asc; OpenAI's default is desc, newest first
  std::size_t limit = 20;  // 1-100
  std::string after;       // an item id: the page starts after it
};

// The query parameters; a 400 names the one at fault.
Parsed<InputItemsQuery> parse_input_items_query(const std::map<std::string, std::string>& query);

// The page of `input_json` (the request's input, as stored) for `query`; a 400 when `after`
// names no item of the response. `token` is the response's RequestIdentity::token.
Parsed<std::string> input_items_page(std::string_view input_json, std::string_view token,
                                     const InputItemsQuery& query);

}  // namespace recur::server
