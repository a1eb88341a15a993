// Adapts an immutable model snapshot to the cache's opaque Snapshot interface (the cache knows
// nothing about models; model/ knows nothing about the cache).
#pragma once

#include <memory>

#include "cache/snapshot.h"
#include "model/state.h"

namespace recur::engine {

class CachedState final : public cache::Snapshot {
 public:
  explicit CachedState(std::shared_ptr<const model::Snapshot> snapshot)
      : snapshot_(std::move(snapshot)) {}
  std::size_t byte_size() const override { return snapshot_->byte_size(); }
  std::int64_t n_tokens() const override { return snapshot_->n_tokens(); }
  bool truncatable() const override { return snapshot_->truncatable(); }
  const model::Snapshot& model_snapshot() const { return *snapshot_; }

 private:
  std::shared_ptr<const model::Snapshot> snapshot_;
};

}  // namespace recur::engine
