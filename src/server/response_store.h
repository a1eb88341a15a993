// What /v1/responses keeps so that a follow-up can name `previous_response_id` and send only its
// new items: each stored response is a node holding its own new messages and its parent node, so
// a conversation's history is shared, never copied per turn. Bounded by bytes (every live node
// counted, also one kept alive only as a later response's ancestor) and by age; the oldest
// entries go first. Not a database: nothing survives a restart.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/thread_annotations.h"
#include "chat/message.h"

namespace recur::server {

struct ResponseStoreLimits {
  std::size_t capacity_bytes = 64u << 20;      // --responses-store-bytes; 0 keeps nothing
  std::chrono::milliseconds ttl{3600 * 1000};  // --responses-store-ttl
};

// Bytes a stored node holds, subtracted from the store's live count when the node goes (which
// may be after the store dropped it: a later response of the conversation keeps its ancestors).
class LiveCharge {
 public:
  LiveCharge() = default;
  LiveCharge(std::shared_ptr<std::atomic<std::int64_t>> counter, std::int64_t bytes);
  LiveCharge(LiveCharge&& other) noexcept;
  LiveCharge& operator=(LiveCharge&& other) noexcept;
  ~LiveCharge();

 private:
  std::shared_ptr<std::atomic<std::int64_t>> counter_;
  std::int64_t bytes_ = 0;
};

// One stored response. Immutable once stored.
struct StoredResponse {
  std::string id;
  std::string tenant;   // API key identity: another tenant never finds it
  std::string session;  // the conversation's cache session: the chain's first response's ("": none)
  std::vector<chat::Message> messages;           // this turn's input messages and its reply
  std::shared_ptr<const StoredResponse> parent;  // the previous_response_id's node, or null
  std::string response_json;                     // what GET /v1/responses/{id} returns
  std::string input_json;       // its request's `input` as sent: GET /v1/responses/{id}/input_items
  std::size_t chain_bytes = 0;  // this node's bytes plus its ancestors'
  LiveCharge charge;            // set by ResponseStore::put

  // Every message of the conversation through this response, oldest first.
  std::vector<chat::Message> history() const;
  std::size_t own_bytes() const;
};

struct ResponseStoreStats {
  std::size_t entries = 0;
  std::int64_t live_bytes = 0;  // bytes of every node still in memory
  std::size_t capacity_bytes = 0;
};

class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ResponseStore(ResponseStoreLimits limits);

  // Keeps `r` (its chain_bytes computed here). False when it cannot be kept: the store is off or
  // the conversation through it is larger than the whole budget.
  bool put(StoredResponse r, Clock::time_point now = Clock::now());
  // The response `id` of `tenant`, unless unknown, expired, evicted or another tenant's.
  std::shared_ptr<const StoredResponse> get(const std::string& id, const std::string& tenant,
                                            Clock::time_point now = Clock::now());
  // Removes it; false when get() would not have found it.
  bool erase(const std::string& id, const std::string& tenant,
             Clock::time_point now = Clock::now());
  ResponseStoreStats stats() const;
  const ResponseStoreLimits& limits() const { return limits_; }

 private:
  struct Entry {
    std::shared_ptr<const StoredResponse> node;
    Clock::time_point stored_at;
  };
  void expire(Clock::time_point now) RECUR_REQUIRES(mu_);
  void remove(std::list<Entry>::iterator it) RECUR_REQUIRES(mu_);

  const ResponseStoreLimits limits_;
  std::shared_ptr<std::atomic<std::int64_t>> live_bytes_;
  mutable cache::Mutex mu_;
  std::list<Entry> order_ RECUR_GUARDED_BY(mu_);  // oldest first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_id_ RECUR_GUARDED_BY(mu_);
};

}  // namespace recur::server
