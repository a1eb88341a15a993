// Adapts an immutable model snapshot to the cache's opaque Snapshot interface (the cache knows
// nothing about models; model/ knows nothing about the cache), and the codec that lets the disk
// tier write such snapshots and rebuild them for the same model.
#pragma once

#include <memory>

#include "cache/snapshot.h"
#include "cache/snapshot_codec.h"
#include "model/model.h"
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

// The payload of a CachedState is the model snapshot's payload, as SequenceState::snapshot()
// laid it out; the signature covers the weights (fingerprint) and the state layout's sizes, so
// a file is only ever decoded by a server whose states have the same shape. Thread-safe.
class CachedStateCodec final : public cache::SnapshotCodec {
 public:
  // `model` must outlive the codec.
  explicit CachedStateCodec(const model::Model& model);
  std::span<const std::uint8_t> payload(const cache::Snapshot& snapshot) const override;
  Result<std::shared_ptr<const cache::Snapshot>> decode(std::vector<std::uint8_t> payload,
                                                        std::int64_t n_tokens,
                                                        bool truncatable) const override;
  std::uint64_t model_signature() const override { return signature_; }

 private:
  const model::Model& model_;
  std::uint64_t signature_;
};

}  // namespace recur::engine
