#include "server/response_store.h"

#include <algorithm>

namespace recur::server {

namespace {

// Bookkeeping beside the text (the node, the list and map entries): a rough, fixed charge.
constexpr std::size_t kNodeOverheadBytes = 256;
constexpr std::size_t kMessageOverheadBytes = 128;

std::size_t message_bytes(const chat::Message& m) {
  std::size_t n = kMessageOverheadBytes + m.role.size() + m.content.value_or("").size() +
                  m.reasoning_content.value_or("").size() + m.tool_call_id.value_or("").size() +
                  m.name.value_or("").size();
  for (const auto& p : m.content_parts) n += p.type.size() + p.text.size();
  for (const auto& c : m.tool_calls) n += c.id.size() + c.name.size() + c.arguments_json.size();
  return n;
}

}  // namespace

std::vector<chat::Message> StoredResponse::history() const {
  std::vector<const StoredResponse*> chain;
  for (const StoredResponse* n = this; n != nullptr; n = n->parent.get()) chain.push_back(n);
  std::vector<chat::Message> out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    out.insert(out.end(), (*it)->messages.begin(), (*it)->messages.end());
  }
  return out;
}

std::size_t StoredResponse::own_bytes() const {
  std::size_t n = kNodeOverheadBytes + id.size() + tenant.size() + session.size() +
                  response_json.size() + input_json.size();
  for (const auto& m : messages) n += message_bytes(m);
  return n;
}

LiveCharge::LiveCharge(std::shared_ptr<std::atomic<std::int64_t>> counter, std::int64_t bytes)
    : counter_(std::move(counter)), bytes_(bytes) {
  counter_->fetch_add(bytes_);
}

LiveCharge::LiveCharge(LiveCharge&& other) noexcept
    : counter_(std::move(other.counter_)), bytes_(other.bytes_) {}

LiveCharge& LiveCharge::operator=(LiveCharge&& other) noexcept {
  if (this != &other) {
    if (counter_) counter_->fetch_sub(bytes_);
    counter_ = std::move(other.counter_);
    bytes_ = other.bytes_;
  }
  return *this;
}

LiveCharge::~LiveCharge() {
  if (counter_) counter_->fetch_sub(bytes_);
}

ResponseStore::ResponseStore(ResponseStoreLimits limits)
    : limits_(limits), live_bytes_(std::make_shared<std::atomic<std::int64_t>>(0)) {}

bool ResponseStore::put(StoredResponse r, Clock::time_point now) {
  r.chain_bytes = r.own_bytes() + (r.parent ? r.parent->chain_bytes : 0);
  if (limits_.capacity_bytes == 0 || r.chain_bytes > limits_.capacity_bytes) return false;
  r.charge = LiveCharge(live_bytes_, static_cast<std::int64_t>(r.own_bytes()));
  auto node = std::make_shared<const StoredResponse>(std::move(r));
  cache::MutexLock lock(mu_);
  expire(now);
  if (auto old = by_id_.find(node->id); old != by_id_.end()) remove(old->second);
  order_.push_back({.node = node, .stored_at = now});
  by_id_[node->id] = std::prev(order_.end());
  // The oldest go first. Evicting an ancestor of a live response frees nothing by itself, so
  // this goes on until the live bytes fit; the new node's own chain fits, so it stays.
  while (live_bytes_->load() > static_cast<std::int64_t>(limits_.capacity_bytes) &&
         order_.front().node != node) {
    remove(order_.begin());
  }
  return true;
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id,
                                                         const std::string& tenant,
                                                         Clock::time_point now) {
  cache::MutexLock lock(mu_);
  expire(now);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second->node->tenant != tenant) return nullptr;
  return it->second->node;
}

bool ResponseStore::erase(const std::string& id, const std::string& tenant, Clock::time_point now) {
  std::shared_ptr<const StoredResponse> freed;  // released after the lock
  cache::MutexLock lock(mu_);
  expire(now);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second->node->tenant != tenant) return false;
  freed = it->second->node;
  remove(it->second);
  return true;
}

ResponseStoreStats ResponseStore::stats() const {
  cache::MutexLock lock(mu_);
  return {.entries = by_id_.size(),
          .live_bytes = live_bytes_->load(),
          .capacity_bytes = limits_.capacity_bytes};
}

void ResponseStore::expire(Clock::time_point now) {
  while (!order_.empty() && now - order_.front().stored_at >= limits_.ttl) {
    remove(order_.begin());
  }
}

void ResponseStore::remove(std::list<Entry>::iterator it) {
  by_id_.erase(it->node->id);
  order_.erase(it);
}

}  // namespace recur::server
