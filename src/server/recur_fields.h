// recur's own fields of a response body, beside the API's (clients ignore unknown fields): the
// cache trace (`x_recur_cache`) and where the request's time went (`x_recur_timing`), added to the
// JSON value before it is serialized; and the SSE comment that carries the trace in a stream.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

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

// ": x-recur-cache <trace>\n\n": a stream's trace as an SSE comment, which clients ignore and
// people, tests and the chat page read.
std::string cache_trace_comment(const engine::CacheTrace& trace);

}  // namespace recur::server
