// The contract between the generic model driver (model.cc) and a model: it lists its tensors
// through one visitor, declares its per-layer state, and runs its layers over a batch. The one
// implementation is the decoder stack (stack.h) that every family's create function builds;
// families register in registry.cc, the only place that knows them all. Internal to model/.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/kernels.h"
#include "model/config_json.h"
#include "model/state.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace recur::model {

enum class Need : std::uint8_t { kRequired, kOptional };

// The three Linears of a SwiGLU expert, and how a checkpoint may name them (model/moe.h MoeNames).
enum class ExpertProj : std::uint8_t { kGate, kUp, kDown };
struct ExpertLayout {
  std::string per_expert_proj[3] = {"gate_proj", "up_proj", "down_proj"};
  // Stacked over the experts: [E, 2 * rows, cols] gate rows first, and [E, rows, cols] (full
  // tensor names under the module prefix).
  std::string fused_gate_up = "experts.gate_up_proj", fused_down = "experts.down_proj";
  bool per_expert = true;  // a tensor per expert is accepted when neither stacked layout is there
  // Without a gate (Nemotron-H's ReLU² experts): fused_gate_up holds the up Linears alone,
  // [E, rows, cols].
  bool gated = true;
  // MLX's names under `<p>switch_mlp.` (mlx-lm's nemotron_h.py stacks up / down as fc1 / fc2).
  std::string mlx_proj[3] = {"gate_proj", "up_proj", "down_proj"};
};

// One tensor visitor per family lists every tensor it reads and drives loading: the loader binds
// each slot to the checkpoint (matrices as views into the mapping, small vectors converted to f32),
// the docs/tests visitor just records names and shapes.
class TensorVisitor {
 public:
  virtual ~TensorVisitor() = default;
  // A 2-D weight read in place: shape [rows, cols].
  virtual void matrix(const std::string& name, std::int64_t rows, std::int64_t cols,
                      kernels::WeightView* slot, Need need = Need::kRequired) = 0;
  // A small parameter of any shape, copied to f32 (norm weights, conv kernels, A_log, ...).
  // An optional vector that is absent is left empty.
  virtual void vector(const std::string& name, std::vector<std::int64_t> shape,
                      std::vector<float>* slot, Need need = Need::kRequired) = 0;
  // One Linear (gate, up or down) of each of slots->size() experts, each [rows, cols], under the
  // module prefix `p`. Hugging Face files hold a tensor per expert,
  // `<p>experts.<e>.<per_expert_proj>.weight`, or stacked ones (transformers 5's fused
  // experts.gate_up_proj / down_proj, Granite's input_linear / output_linear); MLX conversions
  // stack them into `<p>switch_mlp.{gate,up,down}_proj.weight` [experts, rows, cols] (quantized:
  // codes, scales and biases each stacked). This default names the per-expert tensors; the loader
  // reads any of the layouts (tensor_binding.cc).
  virtual void expert_matrices(const std::string& p, ExpertProj proj, std::int64_t rows,
                               std::int64_t cols, const ExpertLayout& layout,
                               std::vector<kernels::WeightView>* slots) {
    const std::string& name = layout.per_expert_proj[static_cast<int>(proj)];
    for (std::size_t e = 0; e < slots->size(); ++e) {
      matrix(p + "experts." + std::to_string(e) + "." + name + ".weight", rows, cols, &(*slots)[e]);
    }
  }
  // gpt-oss's experts under the module prefix `p` ("model.layers.N.mlp.experts."), each expert's
  // gate and up [d_ff, d_model] and down [d_model, d_ff] bound as Linears (slots sized to the
  // experts). As released, MXFP4 (docs/model-gpt-oss.md): gate_up_proj_blocks
  // [E, 2 * d_ff, d_model / 32, 16] and gate_up_proj_scales [E, 2 * d_ff, d_model / 32], U8, gate
  // rows even and up rows odd; down_proj_blocks / _scales [E, d_model, d_ff / 32, (16)]. Or as
  // transformers' dequantized parameters (bf16 conversions): gate_up_proj [E, d_model, 2 * d_ff]
  // (gate columns even) and down_proj [E, d_ff, d_model], both applied as x · W.
  virtual void interleaved_experts(const std::string& p, std::int64_t d_ff, std::int64_t d_model,
                                   std::vector<kernels::WeightView>* gate,
                                   std::vector<kernels::WeightView>* up,
                                   std::vector<kernels::WeightView>* down) = 0;
  // The checkpoint's zero-centred norm weights already hold 1 + w (MLX writes them so): the
  // loader must not add the 1 again (model/blocks.h visit_norm).
  virtual bool norms_hold_one() const { return false; }
  // Whether the checkpoint holds `name` (for a family that reads one of two layouts, e.g. Granite
  // 4.0-H's fused shared_mlp.input_linear or MLX's split mlp.gate_proj / up_proj). Visitors without
  // a checkpoint (docs, tests) answer false: the Hugging Face layout.
  virtual bool has_tensor(const std::string& /*name*/) const { return false; }
};

// One sequence's part of a batch: rows [row0, row0 + n_rows) of every activation buffer.
struct ChunkRows {
  SequenceState* seq = nullptr;
  std::int64_t row0 = 0;
  std::int64_t n_rows = 0;
  std::int64_t pos0 = 0;  // absolute position of the first row (tokens already in the state)
};

// A bump allocator over scratch sized once at load for the largest batch: no allocation per step.
class Scratch {
 public:
  void reserve_floats(std::int64_t n) { buf_.resize(static_cast<std::size_t>(n)); }
  float* take(std::int64_t n);  // RECUR_CHECKs capacity
  void reset() { used_ = 0; }
  std::int64_t used() const { return used_; }
  void rewind(std::int64_t mark) { used_ = mark; }

 private:
  std::vector<float> buf_;
  std::int64_t used_ = 0;
};

// Gives back what a block took from the scratch when the block returns, so a layer needs the
// largest block's scratch, not the sum.
class ScratchFrame {
 public:
  explicit ScratchFrame(Scratch* s) : s_(s), mark_(s->used()) {}
  ~ScratchFrame() { s_->rewind(mark_); }
  ScratchFrame(const ScratchFrame&) = delete;
  ScratchFrame& operator=(const ScratchFrame&) = delete;

 private:
  Scratch* s_;
  std::int64_t mark_;
};

// What a layer's forward sees.
struct ForwardCtx {
  ThreadPool* pool = nullptr;
  std::int64_t n_rows = 0;                  // rows of the batch (all chunks)
  std::span<const ChunkRows> chunks;        // in row order
  const std::int32_t* positions = nullptr;  // [n_rows] absolute positions
  Scratch* scratch = nullptr;
};

class FamilyModel {
 public:
  virtual ~FamilyModel() = default;
  virtual std::int64_t d_model() const = 0;
  virtual std::int64_t vocab_size() const = 0;
  virtual StateLayout state_layout() const = 0;
  // Decoder layers (num_hidden_layers): one state entry each, except where a layer holds two
  // (Falcon-H1's parallel attention and Mamba2).
  virtual std::int64_t n_layers() const {
    return static_cast<std::int64_t>(state_layout().layers.size());
  }
  // Every tensor, bound through `v` (also the list for docs and tests).
  virtual void visit_tensors(TensorVisitor& v) = 0;
  // Scratch floats per batch row the layers need at most (beyond the driver's own buffers).
  virtual std::int64_t scratch_floats_per_row() const = 0;
  // h [n_rows, d_model] f32, the residual stream after embedding; leaves it after the last layer.
  virtual void forward_layers(ForwardCtx& ctx, float* h) = 0;
  // Final norm in place over rows of h [n, d_model].
  virtual void final_norm(float* h, std::int64_t n_rows) const = 0;
  // Last touch on logit rows [n, vocab] after the head (Gemma's final_logit_softcapping).
  virtual void finish_logits(float* /*logits*/, std::int64_t /*n_rows*/) const {}
  virtual const kernels::WeightView& embedding() const = 0;
  virtual const kernels::WeightView& lm_head() const = 0;
};

// How mlx-lm and mlx-vlm convert a family's Hugging Face checkpoint (the sanitize of its model
// file), which recur quantize and the generator's MLX writer follow and the loader reads back.
struct MlxConversion {
  enum class Names : std::uint8_t {
    kKept,           // as in the Hugging Face file
    kLanguageModel,  // qwen3_5.py: under language_model.; mtp.* and the vision tower dropped
    kGluRenamed,     // lfm2_moe.py: the feed-forward's w1 / w3 / w2 become gate / up / down_proj
  };
  Names names = Names::kKept;
  bool folds_norm_one = false;     // zero-centred norms stored as 1 + w (qwen3_5.py, qwen3_next.py)
  bool stacks_experts = false;     // per-expert Linears stacked into switch_mlp.*
  bool splits_shared_mlp = false;  // without experts, shared_mlp.input_linear into mlp.gate/up_proj
  // The stacked experts are switch_mlp.fc1 (up_proj) and fc2 (down_proj): nemotron_h.py's SwitchMLP
  // of un-gated experts.
  bool switch_fc = false;
  // model_types of the family that recur quantize refuses: the wrappers whose other towers or
  // text-only spellings mlx-lm's sanitize of this family does not describe.
  std::vector<std::string_view> unconverted_types;
};

// Registry entry: one per family (registry.cc).
struct FamilyInfo {
  std::string_view name;                          // canonical model_type
  std::vector<std::string_view> model_types;      // accepted model_type values (name first)
  std::vector<std::string_view> tensor_prefixes;  // tried in order with probe_tensor
  std::string_view probe_tensor;                  // a tensor every checkpoint of the family has
  // Module paths (by suffix) that mlx-lm's quant_predicate keeps at 8 bits in groups of 64 when it
  // quantizes the family at any format: the MoE routers (docs/checkpoints.md). --quantize follows
  // it, and the MLX writers (modelgen) do too.
  std::vector<std::string_view> mlx_8bit_modules;
  // Module paths (by suffix) whose weight mlx-lm never quantizes: matrices held by a plain module
  // rather than a Linear (nemotron_h.py's MoEGate router). --quantize and the MLX writers leave
  // them floating too.
  std::vector<std::string_view> mlx_float_modules;
  MlxConversion mlx;
  // Typed config from config.json; `prefix` is the resolved tensor-name prefix.
  std::function<Result<std::unique_ptr<FamilyModel>>(const ConfigJson&, const std::string& prefix)>
      create;
};

std::span<const FamilyInfo> families();
// The family that accepts config.json's model_type `type`, or null.
const FamilyInfo* family_for_type(std::string_view type);
// Whether mlx-lm quantizes `module` (a weight's name without ".weight") of the family named
// `family` (FamilyInfo::name) at 8 bits in groups of 64 whatever the checkpoint's format.
bool mlx_keeps_at_8_bits(std::string_view family, std::string_view module);
// Whether mlx-lm leaves `module`'s weight of the family named `family` unquantized
// (FamilyInfo::mlx_float_modules).
bool mlx_keeps_floating(std::string_view family, std::string_view module);
// The family for config.json's model_type, or an error listing the supported ones.
Result<const FamilyInfo*> find_family(const ConfigJson& config);

// Only the plain ("default") RoPE is implemented: a config asking for YaRN, linear or dynamic
// scaling is refused rather than silently run with the wrong frequencies.
Status check_default_rope(const ConfigJson& c);

// Upper bounds on a config's size fields, far above any real checkpoint, so that a corrupt
// config.json is an error rather than a huge allocation or an int64 overflow in state sizes
// (found by fuzz_config_json): layers <= 1024, widths (hidden, intermediate, vocab) <= 2^20, heads,
// head dims, state sizes, groups, conv kernels and expand factors <= 4096.
Status check_size_bounds(const ConfigJson& c, std::int64_t n_layers,
                         std::initializer_list<std::int64_t> widths,
                         std::initializer_list<std::int64_t> dims);

// KV dtype shared by the loader and the from-config size function: f32 for f32 checkpoints
// (exact reference tests), bf16 otherwise (half the memory; design section 6).
Result<kernels::DType> kv_dtype_from_config(const ConfigJson& c);

}  // namespace recur::model
