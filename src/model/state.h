// Per-sequence model state and its immutable snapshots (design section 4). A SequenceState holds,
// per layer, attention K/V for n tokens (growable, truncatable), a sliding-window ring of K/V
// (the last `window` tokens in fixed memory; Gemma 3's local layers), or a fixed recurrent state
// (Gated DeltaNet / Mamba2: f32 state + conv window). A Snapshot is an exact copy of the payload
// with the model fingerprint and token count; restore copies and never consumes. Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/dtype.h"
#include "util/status.h"

namespace recur::model {

// A ring layer's attention runs a chunk in pieces of at most this many tokens (blocks.cc): the
// ring keeps window + kRingPieceTokens - 1 slots, so writing a piece never overwrites a key that
// a query of the same piece still sees.
inline constexpr std::int64_t kRingPieceTokens = 64;

// What one layer keeps between forward calls.
struct LayerStateSpec {
  enum class Kind : std::uint8_t { kAttention, kRecurrent };
  Kind kind = Kind::kAttention;
  // kAttention: K and V, n_kv_heads x head_dim per token in kv_dtype (kept head-major in a
  // SequenceState and a snapshot); n_heads query heads read them (cost figures).
  std::int64_t n_kv_heads = 0;
  std::int64_t n_heads = 0;
  std::int64_t head_dim = 0;
  kernels::DType kv_dtype = kernels::DType::kF32;
  // kAttention with window > 0: a query sees only the last `window` positions (itself included),
  // and only they are kept, in a ring of ring_slots() slots. Each token is written twice, at slot
  // pos % ring_slots() and ring_slots() further, so every window is one contiguous run of slots
  // (what the attention kernel reads) even where the ring wraps. Not truncatable.
  std::int64_t window = 0;
  // kRecurrent: f32 recurrent state and f32 conv window (last K-1 conv inputs).
  std::int64_t state_floats = 0;
  std::int64_t conv_floats = 0;

  bool ring() const { return kind == Kind::kAttention && window > 0; }
  std::int64_t ring_slots() const { return window + kRingPieceTokens - 1; }
  // K and V bytes of one token (any attention layer, ring or not).
  std::int64_t kv_bytes_per_token() const {
    return kind == Kind::kAttention ? 2 * n_kv_heads * head_dim * kernels::dtype_bytes(kv_dtype)
                                    : 0;
  }
  // Tokens of K/V this layer keeps (and a snapshot holds) after n tokens.
  std::int64_t kept_tokens(std::int64_t n) const { return ring() && n > window ? window : n; }
  // Snapshot bytes of this layer after n tokens.
  std::int64_t snapshot_bytes(std::int64_t n) const {
    if (kind == Kind::kRecurrent) return (state_floats + conv_floats) * 4;
    return kept_tokens(n) * kv_bytes_per_token();
  }
};

struct StateLayout {
  std::vector<LayerStateSpec> layers;

  // Payload bytes of a snapshot at n_tokens: the growing KV, the rings' last min(n, window)
  // tokens and the recurrent states (equal to fixed_bytes() + n · kv_bytes_per_token() once n
  // reaches every window).
  std::int64_t snapshot_bytes(std::int64_t n_tokens) const;
  // K/V bytes per token of the layers whose KV grows with the context (rings excluded).
  std::int64_t kv_bytes_per_token() const;
  // Bytes that do not grow with the context: recurrent states and full rings.
  std::int64_t fixed_bytes() const;
  // True when every layer is full attention: any prefix of the state is a valid state. A ring or
  // a recurrent layer has forgotten what a shorter prefix would hold.
  bool truncatable() const;
};

// An immutable copy of a sequence state. Usable by the prompt cache as an opaque value.
class Snapshot {
 public:
  Snapshot(std::uint64_t fingerprint, std::int64_t n_tokens, bool truncatable,
           std::vector<std::uint8_t> payload);

  std::size_t byte_size() const { return payload_.size(); }  // payload only
  std::int64_t n_tokens() const { return n_tokens_; }
  bool truncatable() const { return truncatable_; }
  std::uint64_t fingerprint() const { return fingerprint_; }
  const std::vector<std::uint8_t>& payload() const { return payload_; }

 private:
  std::uint64_t fingerprint_;
  std::int64_t n_tokens_;
  bool truncatable_;
  std::vector<std::uint8_t> payload_;
};

class SequenceState {
 public:
  // The layout must outlive the state (it lives in the Model).
  SequenceState(const StateLayout* layout, std::uint64_t fingerprint);

  std::int64_t n_tokens() const { return n_tokens_; }
  bool truncatable() const { return layout_->truncatable(); }
  std::uint64_t fingerprint() const { return fingerprint_; }

  std::shared_ptr<const Snapshot> snapshot() const;
  // Replaces this state with a copy of `snap`; refuses a snapshot of another model.
  Status restore(const Snapshot& snap);
  // Keeps the first n tokens; only for truncatable states, n <= n_tokens().
  Status truncate(std::int64_t n);
  // Replaces this state with the first n tokens of `other`'s (a live sequence of the same model),
  // copied directly rather than through a Snapshot; only for truncatable states.
  Status copy_prefix_from(const SequenceState& other, std::int64_t n);
  // Back to zero tokens (recurrent state zeroed).
  void reset();

  // --- interior captures: the state at a position inside a forward's chunk, without ending the
  // chunk there (a follow-up turn's boundary snapshot costs a copy, not a second forward) ---
  // Asks the next forward to record the state after n tokens, n past n_tokens(); the forward's
  // chunk must reach n. Several may be pending (sorted by position).
  Status request_capture(std::int64_t n);
  // The snapshot of the state after n tokens, once a forward has passed n: K/V of the first n
  // tokens from the live state, recurrent layers as the forward recorded them. Drops the capture.
  Result<std::shared_ptr<const Snapshot>> take_capture(std::int64_t n);
  // How far past a capture a chunk may run (ring layers overwrite the window before it after
  // ring_slots() - window more tokens); unlimited without rings.
  std::int64_t capture_tail_limit() const;
  // For recurrent blocks: the pending captures' positions, ascending, and where they record.
  std::int64_t n_captures() const { return static_cast<std::int64_t>(captures_.size()); }
  std::int64_t capture_position(std::size_t capture) const { return captures_[capture].n_tokens; }
  void capture_recurrent(std::size_t capture, std::size_t layer, const float* state);
  // `window` as conv_window(layer) holds it: the last K-1 conv inputs before the position.
  void capture_conv(std::size_t capture, std::size_t layer, const float* window);

  // --- for model code (forward) ---
  // Makes room for K/V of n tokens in total; grows in blocks so decode rarely allocates.
  void reserve_tokens(std::int64_t n);
  // An attention layer's K and V, each head-major: [n_kv_heads, capacity_tokens(), head_dim], so
  // a decode task reads one kv head's keys as one contiguous stream (token-major rows put 256
  // bytes of a head in every 2 KiB, which the hardware prefetchers follow at half the bandwidth).
  // A ring layer's buffers are [n_kv_heads, 2 · ring_slots(), head_dim] (LayerStateSpec::window).
  std::uint8_t* k_data(std::size_t layer) { return layers_[layer].k.data(); }
  std::uint8_t* v_data(std::size_t layer) { return layers_[layer].v.data(); }
  float* recurrent(std::size_t layer) { return layers_[layer].state.data(); }
  float* conv_window(std::size_t layer) { return layers_[layer].conv.data(); }
  void advance(std::int64_t n) { n_tokens_ += n; }
  std::int64_t capacity_tokens() const { return capacity_tokens_; }

 private:
  // Every layer's payload at n_tokens (its K/V rows and ring slots must still be intact); the
  // recurrent layers' bytes are skipped unless with_recurrent.
  void write_payload(std::int64_t n_tokens, std::uint8_t* out, bool with_recurrent) const;

  // The recurrent layers' state and conv window at a capture position, in a slot of
  // capture_buf_ (kept across requests: requesting a capture allocates nothing in steady state,
  // and the snapshot's payload is built only in take_capture, after the forward).
  struct Capture {
    std::int64_t n_tokens = 0;
    std::size_t slot = 0;
    std::vector<std::uint8_t> written;  // recurrent layers: 1 state, 2 conv window
  };
  std::uint8_t* capture_bytes(std::size_t capture, std::size_t layer);
  std::int64_t recurrent_bytes() const;
  struct LayerData {
    std::vector<std::uint8_t> k, v;  // [n_kv_heads, capacity_tokens_ or 2 · ring, head_dim]
    std::vector<float> state, conv;
  };
  const StateLayout* layout_;
  std::uint64_t fingerprint_;
  std::int64_t n_tokens_ = 0;
  std::int64_t capacity_tokens_ = 0;
  std::vector<LayerData> layers_;
  std::vector<Capture> captures_;
  std::vector<std::uint8_t> capture_buf_;  // slots of recurrent_bytes() each
};

}  // namespace recur::model
