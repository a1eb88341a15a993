#include "engine/cached_state.h"

#include "util/hash.h"

namespace recur::engine {
namespace {

// The layout through what a snapshot's bytes depend on: each layer's bytes at a few token counts
// (any new layer kind or size, such as a sliding window, changes some of them) and its kind.
std::uint64_t layout_signature(const model::StateLayout& layout) {
  std::uint64_t h = hash64(std::string_view("recur-state-layout-v1"));
  for (const model::LayerStateSpec& l : layout.layers) {
    h = hash_combine(h, static_cast<std::uint64_t>(l.kind));
    h = hash_combine(h, static_cast<std::uint64_t>(l.kv_dtype));
    h = hash_combine(h, static_cast<std::uint64_t>(l.n_kv_heads * 1'000'003 + l.head_dim));
  }
  for (std::int64_t n : {1, 63, 1000, 65536}) {
    h = hash_combine(h, static_cast<std::uint64_t>(layout.snapshot_bytes(n)));
  }
  return h;
}

}  // namespace

CachedStateCodec::CachedStateCodec(const model::Model& model)
    : model_(model),
      signature_(hash_combine(model.fingerprint(), layout_signature(model.state_layout()))) {}

std::span<const std::uint8_t> CachedStateCodec::payload(const cache::Snapshot& snapshot) const {
  return static_cast<const CachedState&>(snapshot).model_snapshot().payload();
}

Result<std::shared_ptr<const cache::Snapshot>> CachedStateCodec::decode(
    std::vector<std::uint8_t> payload, std::int64_t n_tokens, bool truncatable) const {
  const model::StateLayout& layout = model_.state_layout();
  const std::int64_t expected = layout.snapshot_bytes(n_tokens);
  if (static_cast<std::int64_t>(payload.size()) != expected ||
      truncatable != layout.truncatable()) {
    return Error(StatusCode::kDataLoss,
                 "a snapshot of {} tokens has {} payload bytes (truncatable {}); this model's has "
                 "{} (truncatable {})",
                 n_tokens, payload.size(), truncatable, expected, layout.truncatable());
  }
  auto snap = std::make_shared<const model::Snapshot>(model_.fingerprint(), n_tokens, truncatable,
                                                      std::move(payload));
  return std::shared_ptr<const cache::Snapshot>(std::make_shared<CachedState>(std::move(snap)));
}

}  // namespace recur::engine
