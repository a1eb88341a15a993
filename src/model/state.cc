// Snapshot payload layout, layer by layer: attention K[n_kv, n, hd] then V[n_kv, n, hd] for the
// first n tokens only (the live state's head-major layout without its spare capacity); a ring the
// same for its last min(n, window) tokens in position order; recurrent state then conv window. No
// padding, so byte_size() equals StateLayout::snapshot_bytes(n) exactly. Where a ring's tokens sit
// follows from n alone (slot = position % ring_slots), so the payload needs no write index.
#include "model/state.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "util/check.h"

namespace recur::model {

namespace {
// K/V grow in blocks of this many tokens: decode allocates once per block, not per step.
constexpr std::int64_t kKvGrowTokens = 256;

// Copies the first n tokens of every kv head between two head-major K or V buffers whose heads
// are src_cap and dst_cap tokens apart.
void copy_heads(const std::uint8_t* src, std::int64_t src_cap, std::uint8_t* dst,
                std::int64_t dst_cap, std::int64_t n, const LayerStateSpec& spec) {
  const std::int64_t row = spec.head_dim * kernels::dtype_bytes(spec.kv_dtype);
  if (n == 0) return;
  for (std::int64_t h = 0; h < spec.n_kv_heads; ++h) {
    std::memcpy(dst + h * dst_cap * row, src + h * src_cap * row,
                static_cast<std::size_t>(n * row));
  }
}
// Bytes of one token's row of one kv head.
std::int64_t row_bytes(const LayerStateSpec& spec) {
  return spec.head_dim * kernels::dtype_bytes(spec.kv_dtype);
}

// A ring's last `kept` tokens before position n, head by head, into packed [n_kv, kept, hd]: one
// contiguous run of slots thanks to the mirrored half.
void ring_to_packed(const std::uint8_t* ring, std::uint8_t* out, std::int64_t n,
                    const LayerStateSpec& spec) {
  const std::int64_t kept = spec.kept_tokens(n), slots = spec.ring_slots(), row = row_bytes(spec);
  const std::int64_t first = (n - kept) % slots;
  copy_heads(ring + first * row, 2 * slots, out, kept, kept, spec);
}

// The inverse: packed rows of positions n - kept .. n - 1 to both their slots.
void packed_to_ring(const std::uint8_t* in, std::uint8_t* ring, std::int64_t n,
                    const LayerStateSpec& spec) {
  const std::int64_t kept = spec.kept_tokens(n), slots = spec.ring_slots(), row = row_bytes(spec);
  for (std::int64_t h = 0; h < spec.n_kv_heads; ++h) {
    for (std::int64_t j = 0; j < kept; ++j) {
      const std::int64_t slot = (n - kept + j) % slots;
      const std::uint8_t* src = in + (h * kept + j) * row;
      std::uint8_t* head = ring + h * 2 * slots * row;
      std::memcpy(head + slot * row, src, static_cast<std::size_t>(row));
      std::memcpy(head + (slot + slots) * row, src, static_cast<std::size_t>(row));
    }
  }
}
}  // namespace

std::int64_t StateLayout::kv_bytes_per_token() const {
  std::int64_t n = 0;
  for (const auto& l : layers) n += l.ring() ? 0 : l.kv_bytes_per_token();
  return n;
}

std::int64_t StateLayout::fixed_bytes() const {
  std::int64_t n = 0;
  for (const auto& l : layers) {
    if (l.kind == LayerStateSpec::Kind::kRecurrent || l.ring()) n += l.snapshot_bytes(l.window);
  }
  return n;
}

std::int64_t StateLayout::snapshot_bytes(std::int64_t n_tokens) const {
  std::int64_t n = 0;
  for (const auto& l : layers) n += l.snapshot_bytes(n_tokens);
  return n;
}

bool StateLayout::truncatable() const {
  return std::all_of(layers.begin(), layers.end(), [](const LayerStateSpec& l) {
    return l.kind == LayerStateSpec::Kind::kAttention && !l.ring();
  });
}

Snapshot::Snapshot(std::uint64_t fingerprint, std::int64_t n_tokens, bool truncatable,
                   std::vector<std::uint8_t> payload)
    : fingerprint_(fingerprint),
      n_tokens_(n_tokens),
      truncatable_(truncatable),
      payload_(std::move(payload)) {}

SequenceState::SequenceState(const StateLayout* layout, std::uint64_t fingerprint)
    : layout_(layout), fingerprint_(fingerprint), layers_(layout->layers.size()) {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& spec = layout_->layers[i];
    layers_[i].state.assign(static_cast<std::size_t>(spec.state_floats), 0.0f);
    layers_[i].conv.assign(static_cast<std::size_t>(spec.conv_floats), 0.0f);
  }
}

void SequenceState::reserve_tokens(std::int64_t n) {
  // A ring is allocated whole, once: its size does not depend on the context.
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& spec = layout_->layers[i];
    if (!spec.ring() || !layers_[i].k.empty() || n == 0) continue;
    const auto bytes = static_cast<std::size_t>(spec.n_kv_heads * 2 * spec.ring_slots()) *
                       static_cast<std::size_t>(row_bytes(spec));
    layers_[i].k.resize(bytes);
    layers_[i].v.resize(bytes);
  }
  if (n <= capacity_tokens_) return;
  std::int64_t cap = std::max(n, capacity_tokens_ * 2);
  cap = (cap + kKvGrowTokens - 1) / kKvGrowTokens * kKvGrowTokens;
  // Each head's rows move to their place in the larger buffer (only the live tokens).
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& spec = layout_->layers[i];
    if (spec.kind != LayerStateSpec::Kind::kAttention || spec.ring()) continue;
    const auto bytes = static_cast<std::size_t>(cap * spec.kv_bytes_per_token() / 2);
    for (std::vector<std::uint8_t>* buf : {&layers_[i].k, &layers_[i].v}) {
      std::vector<std::uint8_t> grown(bytes);
      copy_heads(buf->data(), capacity_tokens_, grown.data(), cap, n_tokens_, spec);
      *buf = std::move(grown);
    }
  }
  capacity_tokens_ = cap;
}

void SequenceState::write_payload(std::int64_t n_tokens, std::uint8_t* out,
                                  bool with_recurrent) const {
  const std::uint8_t* const begin = out;
  auto put = [&](const void* src, std::size_t n) {
    if (n > 0 && with_recurrent) std::memcpy(out, src, n);
    out += n;
  };
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& spec = layout_->layers[i];
    if (spec.ring()) {
      const auto n = static_cast<std::size_t>(spec.snapshot_bytes(n_tokens) / 2);
      if (n > 0) {
        ring_to_packed(layers_[i].k.data(), out, n_tokens, spec);
        ring_to_packed(layers_[i].v.data(), out + n, n_tokens, spec);
      }
      out += 2 * n;
    } else if (spec.kind == LayerStateSpec::Kind::kAttention) {
      const auto n = static_cast<std::size_t>(n_tokens * spec.kv_bytes_per_token() / 2);
      copy_heads(layers_[i].k.data(), capacity_tokens_, out, n_tokens, n_tokens, spec);
      copy_heads(layers_[i].v.data(), capacity_tokens_, out + n, n_tokens, n_tokens, spec);
      out += 2 * n;
    } else {
      put(layers_[i].state.data(), layers_[i].state.size() * sizeof(float));
      put(layers_[i].conv.data(), layers_[i].conv.size() * sizeof(float));
    }
  }
  RECUR_CHECK(out == begin + layout_->snapshot_bytes(n_tokens));
}

std::shared_ptr<const Snapshot> SequenceState::snapshot() const {
  std::vector<std::uint8_t> payload(static_cast<std::size_t>(layout_->snapshot_bytes(n_tokens_)));
  write_payload(n_tokens_, payload.data(), /*with_recurrent=*/true);
  return std::make_shared<const Snapshot>(fingerprint_, n_tokens_, layout_->truncatable(),
                                          std::move(payload));
}

std::int64_t SequenceState::capture_tail_limit() const {
  std::int64_t limit = std::numeric_limits<std::int64_t>::max();
  for (const auto& spec : layout_->layers) {
    // A ring's slots for the window before position n survive ring_slots() - window more tokens.
    if (spec.ring()) limit = std::min(limit, spec.ring_slots() - spec.window);
  }
  return limit;
}

std::int64_t SequenceState::recurrent_bytes() const {
  std::int64_t n = 0;
  for (const auto& spec : layout_->layers) {
    if (spec.kind == LayerStateSpec::Kind::kRecurrent)
      n += (spec.state_floats + spec.conv_floats) * 4;
  }
  return n;
}

Status SequenceState::request_capture(std::int64_t n) {
  if (n <= n_tokens_) {
    return Error(StatusCode::kInvalidArgument,
                 "a capture at {} tokens must lie past the state's {} tokens", n, n_tokens_);
  }
  for (const Capture& c : captures_) {
    if (c.n_tokens == n) return Status::ok();
  }
  Capture c;
  c.n_tokens = n;
  // The lowest slot no pending capture uses.
  while (std::any_of(captures_.begin(), captures_.end(),
                     [&](const Capture& x) { return x.slot == c.slot; })) {
    ++c.slot;
  }
  const auto need =
      static_cast<std::size_t>((static_cast<std::int64_t>(c.slot) + 1) * recurrent_bytes());
  if (capture_buf_.size() < need) capture_buf_.resize(need);
  c.written.assign(layers_.size(), 0);
  captures_.push_back(std::move(c));
  std::sort(captures_.begin(), captures_.end(),
            [](const Capture& a, const Capture& b) { return a.n_tokens < b.n_tokens; });
  return Status::ok();
}

std::uint8_t* SequenceState::capture_bytes(std::size_t capture, std::size_t layer) {
  std::int64_t offset = static_cast<std::int64_t>(captures_[capture].slot) * recurrent_bytes();
  for (std::size_t i = 0; i < layer; ++i) {
    const auto& spec = layout_->layers[i];
    if (spec.kind == LayerStateSpec::Kind::kRecurrent) {
      offset += (spec.state_floats + spec.conv_floats) * 4;
    }
  }
  return capture_buf_.data() + offset;
}

void SequenceState::capture_recurrent(std::size_t capture, std::size_t layer, const float* state) {
  const auto& spec = layout_->layers[layer];
  RECUR_CHECK(spec.kind == LayerStateSpec::Kind::kRecurrent);
  std::memcpy(capture_bytes(capture, layer), state,
              static_cast<std::size_t>(spec.state_floats) * sizeof(float));
  captures_[capture].written[layer] |= 1;
}

void SequenceState::capture_conv(std::size_t capture, std::size_t layer, const float* window) {
  const auto& spec = layout_->layers[layer];
  RECUR_CHECK(spec.kind == LayerStateSpec::Kind::kRecurrent);
  std::memcpy(capture_bytes(capture, layer) + spec.state_floats * 4, window,
              static_cast<std::size_t>(spec.conv_floats) * sizeof(float));
  captures_[capture].written[layer] |= 2;
}

Result<std::shared_ptr<const Snapshot>> SequenceState::take_capture(std::int64_t n) {
  auto it = std::find_if(captures_.begin(), captures_.end(),
                         [n](const Capture& c) { return c.n_tokens == n; });
  if (it == captures_.end()) {
    return Error(StatusCode::kNotFound, "no capture was requested at {} tokens", n);
  }
  const auto index = static_cast<std::size_t>(it - captures_.begin());
  struct Drop {  // the capture is gone whatever happens below
    std::vector<Capture>& v;
    std::size_t i;
    ~Drop() { v.erase(v.begin() + static_cast<std::ptrdiff_t>(i)); }
  } drop{captures_, index};
  if (n_tokens_ < n) {
    return Error(StatusCode::kFailedPrecondition,
                 "the capture at {} tokens is not reached yet: the state has {} tokens", n,
                 n_tokens_);
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& spec = layout_->layers[i];
    if (spec.ring() && n_tokens_ - n > spec.ring_slots() - spec.kept_tokens(n)) {
      return Error(StatusCode::kFailedPrecondition,
                   "layer {}: the ring no longer holds the window before token {} ({} tokens "
                   "were written after it)",
                   i, n, n_tokens_ - n);
    }
    if (spec.kind == LayerStateSpec::Kind::kRecurrent && it->written[i] != 3) {
      return Error(StatusCode::kInternal,
                   "layer {}: the forward did not capture its recurrent state at {} tokens", i, n);
    }
  }
  std::vector<std::uint8_t> payload(static_cast<std::size_t>(layout_->snapshot_bytes(n)));
  write_payload(n, payload.data(), /*with_recurrent=*/false);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& spec = layout_->layers[i];
    if (spec.kind == LayerStateSpec::Kind::kRecurrent) {
      std::memcpy(payload.data() + offset, capture_bytes(index, i),
                  static_cast<std::size_t>((spec.state_floats + spec.conv_floats) * 4));
    }
    offset += static_cast<std::size_t>(spec.snapshot_bytes(n));
  }
  return std::make_shared<const Snapshot>(fingerprint_, n, layout_->truncatable(),
                                          std::move(payload));
}

Status SequenceState::restore(const Snapshot& snap) {
  if (snap.fingerprint() != fingerprint_) {
    return Error(StatusCode::kFailedPrecondition,
                 "snapshot of model {:016x} cannot be restored into a sequence of model {:016x}",
                 snap.fingerprint(), fingerprint_);
  }
  if (static_cast<std::int64_t>(snap.byte_size()) != layout_->snapshot_bytes(snap.n_tokens())) {
    return Error(StatusCode::kDataLoss, "snapshot of {} tokens has {} bytes, expected {}",
                 snap.n_tokens(), snap.byte_size(), layout_->snapshot_bytes(snap.n_tokens()));
  }
  n_tokens_ = 0;  // nothing of the old K/V is kept: growing need not move it
  captures_.clear();
  reserve_tokens(snap.n_tokens());
  const std::uint8_t* in = snap.payload().data();
  auto get = [&](void* dst, std::size_t n) {
    if (n > 0) std::memcpy(dst, in, n);
    in += n;
  };
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& spec = layout_->layers[i];
    if (spec.ring()) {
      const auto n = static_cast<std::size_t>(spec.snapshot_bytes(snap.n_tokens()) / 2);
      packed_to_ring(in, layers_[i].k.data(), snap.n_tokens(), spec);
      packed_to_ring(in + n, layers_[i].v.data(), snap.n_tokens(), spec);
      in += 2 * n;
    } else if (spec.kind == LayerStateSpec::Kind::kAttention) {
      const std::int64_t t = snap.n_tokens();
      const auto n = static_cast<std::size_t>(t * spec.kv_bytes_per_token() / 2);
      copy_heads(in, t, layers_[i].k.data(), capacity_tokens_, t, spec);
      copy_heads(in + n, t, layers_[i].v.data(), capacity_tokens_, t, spec);
      in += 2 * n;
    } else {
      get(layers_[i].state.data(), layers_[i].state.size() * sizeof(float));
      get(layers_[i].conv.data(), layers_[i].conv.size() * sizeof(float));
    }
  }
  n_tokens_ = snap.n_tokens();
  return Status::ok();
}

Status SequenceState::copy_prefix_from(const SequenceState& other, std::int64_t n) {
  if (!truncatable() || other.fingerprint_ != fingerprint_) {
    return Error(StatusCode::kFailedPrecondition,
                 "a state prefix is copied only between truncatable states of one model");
  }
  if (n < 0 || n > other.n_tokens_) {
    return Error(StatusCode::kOutOfRange, "copy of {} tokens from a state of {}", n,
                 other.n_tokens_);
  }
  n_tokens_ = 0;  // nothing of the old K/V is kept: growing need not move it
  captures_.clear();
  reserve_tokens(n);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& spec = layout_->layers[i];
    copy_heads(other.layers_[i].k.data(), other.capacity_tokens_, layers_[i].k.data(),
               capacity_tokens_, n, spec);
    copy_heads(other.layers_[i].v.data(), other.capacity_tokens_, layers_[i].v.data(),
               capacity_tokens_, n, spec);
  }
  n_tokens_ = n;
  return Status::ok();
}

Status SequenceState::truncate(std::int64_t n) {
  if (!truncatable()) {
    return Error(StatusCode::kFailedPrecondition,
                 "this model's state has recurrent or sliding-window layers and cannot be "
                 "truncated");
  }
  if (n < 0 || n > n_tokens_) {
    return Error(StatusCode::kOutOfRange, "cannot truncate a {}-token state to {} tokens",
                 n_tokens_, n);
  }
  n_tokens_ = n;  // K/V past n are dead bytes, overwritten by the next forward
  return Status::ok();
}

void SequenceState::reset() {
  n_tokens_ = 0;
  captures_.clear();
  for (auto& l : layers_) {
    std::fill(l.state.begin(), l.state.end(), 0.0f);
    std::fill(l.conv.begin(), l.conv.end(), 0.0f);
  }
}

}  // namespace recur::model
