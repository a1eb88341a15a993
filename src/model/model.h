// Public API of the model module: load a Hugging Face checkpoint directory (qwen3, qwen3_5,
// mamba2), create sequence states, and run the forward pass over a batch of sequence chunks
// (prefill chunks and decode tokens mixed), returning logits only where asked. Weights stay
// memory-mapped. Not a scheduler and not a sampler (engine/ does those).
// Thread-compatible: one caller (the engine thread) at a time; kernels use the pool passed in.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/state.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace recur {
class Progress;
}

namespace recur::model {

class Checkpoint;
class FamilyModel;
struct QuantizedStore;
class Scratch;

struct LoadOptions {
  // Most token rows one forward call may carry (all chunks together); scratch is sized for it.
  std::int64_t max_batch_tokens = 512;
  // Most logit rows one forward call may return (vocab floats each).
  std::int64_t max_logit_rows = 16;
  // Quantize on load (--quantize): 4 or 8 bits in groups of quantize_group_size, by the rule MLX's
  // converter applies (every matrix whose input width divides by the group size; the family's
  // FamilyInfo::mlx_8bit_modules at 8 bits in groups of 64); 0: as stored.
  // Matrices the checkpoint already holds quantized stay as they are.
  int quantize_bits = 0;
  int quantize_group_size = 64;
  // Told the load's pace: its total is the checkpoint's weight bytes, and each tensor's bytes are
  // added once bound (mapped in place: at once; copied, repacked or quantized: as that goes, a
  // large matrix in pieces). Null: none. Owned by the caller (util/progress.h).
  Progress* progress = nullptr;
  // Runs the repacking of a quantized checkpoint's matrices (null: the loading thread alone). A
  // large checkpoint's load is that repacking and the kernel zeroing the fresh pages it writes.
  ThreadPool* pool = nullptr;
};

enum class LogitsWanted : std::uint8_t { kNone, kLast, kAll };

// One sequence's part of a batch: its next tokens (a prefill chunk or one decode token).
struct SeqChunk {
  SequenceState* seq = nullptr;
  std::span<const std::int32_t> tokens;
  LogitsWanted logits = LogitsWanted::kLast;
};

// Logit rows in batch order: for each chunk, none, its last position, or all its positions.
// A view into the model's buffer, valid until the next forward.
struct Logits {
  const float* data = nullptr;
  std::int64_t n_rows = 0;
  std::int64_t vocab_size = 0;
  std::span<const float> row(std::int64_t i) const {
    return {data + i * vocab_size, static_cast<std::size_t>(vocab_size)};
  }
};

// A tensor a family reads, for docs, tests and `recur` diagnostics.
struct TensorEntry {
  std::string name;
  std::vector<std::int64_t> shape;
  bool required = true;
  // Bytes a forward reads: as stored in the checkpoint, or the codes, scales and biases of a weight
  // quantized on load; 0 for an optional tensor it does not have.
  std::int64_t n_bytes = 0;
  bool u8 = false;  // raw bytes (MXFP4's blocks and scales); else a floating tensor
};

class Model {
 public:
  // Fails with a clear message on: unknown model_type (lists the supported ones), bad config,
  // malformed safetensors, missing tensor (name + expected shape), wrong shape or dtype.
  static Result<std::unique_ptr<Model>> load(const std::string& dir, const LoadOptions& opts = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& family() const { return family_; }
  std::int64_t vocab_size() const;
  std::int64_t d_model() const;
  // eos ids of config.json and generation_config.json together.
  const std::vector<std::int64_t>& eos_ids() const;
  // The context the model was trained for: config.json's max_position_embeddings (or the key its
  // family uses for it); 0 when the config states none (a pure recurrent model, say).
  std::int64_t trained_context() const;
  const StateLayout& state_layout() const { return layout_; }
  std::int64_t n_layers() const;  // decoder layers, as config.json counts them
  // Family + geometry + weights identity; snapshots carry it.
  std::uint64_t fingerprint() const { return fingerprint_; }
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  std::size_t weight_bytes() const;
  // Bytes of quantized weights held in memory in the kernels' packed layout (kernels/quant.h),
  // instead of the mapping: quantized at load (--quantize) or repacked from an MLX checkpoint.
  std::size_t quantized_bytes() const;
  const LoadOptions& options() const { return opts_; }

  std::unique_ptr<SequenceState> new_sequence() const;

  // Runs every chunk's tokens through the model and appends them to its sequence. Errors
  // (nothing is changed then): empty chunk, a sequence twice, a foreign sequence, token id out of
  // range, more rows or logit rows than LoadOptions allow.
  Result<Logits> forward(ThreadPool& pool, std::span<const SeqChunk> batch);

 private:
  Model();
  Status validate(std::span<const SeqChunk> batch, std::int64_t* n_rows,
                  std::int64_t* n_logit_rows) const;

  std::string family_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<FamilyModel> impl_;
  StateLayout layout_;
  std::uint64_t fingerprint_ = 0;
  std::vector<TensorEntry> tensors_;
  LoadOptions opts_;
  std::unique_ptr<QuantizedStore> quantized_;
  // Buffers sized once at load (no allocation per step).
  std::unique_ptr<Scratch> scratch_;
  std::vector<float> h_, h_logit_, logits_;
  std::vector<std::int32_t> ids_, positions_;
  std::vector<std::int64_t> logit_src_rows_;
  struct ChunkBuf;
  std::unique_ptr<ChunkBuf> chunks_;
  std::atomic<bool> in_forward_{false};
};

// The state layout a checkpoint's config.json implies, without loading weights.
Result<StateLayout> state_layout_from_config(const std::string& config_json_text);
// The tensors a Hugging Face checkpoint of this config.json holds for the model, as its family's
// visitor reads them, in that order: experts one tensor each, or stacked where the family stores
// them so (Granite 4.0-H). What the generator writes; n_bytes is 0.
Result<std::vector<TensorEntry>> tensors_from_config(const std::string& config_json_text);
// Snapshot payload bytes at n_tokens from config.json geometry alone (cache budgets).
Result<std::int64_t> snapshot_bytes_from_config(const std::string& config_json_text,
                                                std::int64_t n_tokens);

}  // namespace recur::model
