// recur's own fields of a response body, beside the API's (clients ignore unknown fields): the
// cache trace (`x_recur_cache`) and where the request's time went (`x_recur_timing`). Added to the
// JSON value before it is serialized. Not the SSE comment `: x-recur-cache ...` that ends a
// stream, which the renderers write themselves.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "engine/request.h"
#include "server/request_timing.h"

namespace recur::server {

struct RecurFields {
  const engine::CacheTrace* trace = nullptr;  // x_recur_cache; null: left out
  const RequestTiming* timing = nullptr;      // x_recur_timing; null: left out
};

// Appends them as the last fields of `body` (an object), the trace first: ordered_json keeps
// insertion order, so they come after every field of the API.
void add_recur_fields(nlohmann::ordered_json& body, const RecurFields& fields);

}  // namespace recur::server
