#include "engine/request.h"

#include <fmt/format.h>

namespace recur::engine {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "?";
}

std::string CacheTrace::to_header() const {
  if (hit && !tier.empty() && tier != "ram") {
    return fmt::format("hit; tokens={}; store={}; origin={}; tier={}", hit_tokens, store, origin,
                       tier);
  }
  if (hit) return fmt::format("hit; tokens={}; store={}; origin={}", hit_tokens, store, origin);
  return fmt::format("miss; reason={}", miss_reason.empty() ? "none" : miss_reason);
}

void RequestChannel::push(Event event) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_one();
}

std::optional<Event> RequestChannel::pop(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

}  // namespace recur::engine
