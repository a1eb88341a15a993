#include "server/recur_fields.h"

#include <nlohmann/json.hpp>

namespace recur::server {

void add_recur_fields(nlohmann::ordered_json& body, const RecurFields& fields) {
  if (fields.trace != nullptr) body["x_recur_cache"] = fields.trace->to_header();
  if (fields.timing != nullptr) body["x_recur_timing"] = fields.timing->to_json_object();
}

}  // namespace recur::server
