#include "server/recur_fields.h"

#include <nlohmann/json.hpp>

namespace recur::server {

void add_recur_fields(nlohmann::ordered_json& body, const RecurFields& fields) {
  if (fields.trace != nullptr) body["x_recur_cache"] = fields.trace->to_header();
  if (fields.timing != nullptr) body["x_recur_timing"] = fields.timing->to_json_object();
}

std::string cache_trace_comment(const engine::CacheTrace& trace) {
  return ": x-recur-cache " + trace.to_header() + "\n\n";
}

}  // namespace recur::server
