// What the disk tier needs to put a snapshot in a file and get it back: its payload bytes and a
// way to rebuild a snapshot from them. The cache still knows nothing about models; the engine
// supplies the codec for its model's states (engine/cached_state.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cache/snapshot.h"
#include "util/status.h"

namespace recur::cache {

// Thread-safe: the disk tier's writer and reader threads call it concurrently.
class SnapshotCodec {
 public:
  virtual ~SnapshotCodec() = default;
  // The bytes that stand for `snapshot` on disk; valid while the snapshot lives.
  virtual std::span<const std::uint8_t> payload(const Snapshot& snapshot) const = 0;
  // Rebuilds a snapshot from bytes payload() gave; an error says what does not fit the model.
  virtual Result<std::shared_ptr<const Snapshot>> decode(std::vector<std::uint8_t> payload,
                                                         std::int64_t n_tokens,
                                                         bool truncatable) const = 0;
  // Names the model whose states these are (weights fingerprint + state layout): files written
  // for another signature live in another directory and are never read.
  virtual std::uint64_t model_signature() const = 0;
};

}  // namespace recur::cache
