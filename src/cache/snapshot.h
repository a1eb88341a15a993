// The one thing the cache knows about a model state: an opaque, immutable snapshot that reports
// its exact payload size, its token count and whether a prefix of it can be adopted (dense KV).
// The engine adapts its model snapshots to this interface; the cache never looks inside.
#pragma once

#include <cstddef>
#include <cstdint>

namespace recur::cache {

// Implementations must be immutable once handed to the cache and safe to read from any thread:
// a lookup hands out shared_ptr<const Snapshot>, and the caller copies the state out after the
// store lock is released, possibly while the store evicts the entry.
class Snapshot {
 public:
  virtual ~Snapshot() = default;
  virtual std::size_t byte_size() const = 0;
  virtual std::int64_t n_tokens() const = 0;
  virtual bool truncatable() const = 0;
};

}  // namespace recur::cache
