// Load: config → family (registry) → tensor visitor binds views / f32 copies → state layout and
// fingerprint → scratch sized for the largest batch. Forward: validate, embed, family layers,
// final norm + head on the rows that want logits, advance the sequences.
#include "model/model.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>

#include "kernels/quant.h"
#include "model/checkpoint.h"
#include "model/family.h"
#include "model/tensor_binding.h"
#include "util/check.h"
#include "util/hash.h"
#include "util/progress.h"
#include "util/stage_times.h"

namespace recur::model {

namespace k = recur::kernels;

float* Scratch::take(std::int64_t n) {
  RECUR_CHECK_MSG(used_ + n <= static_cast<std::int64_t>(buf_.size()), "scratch too small");
  float* p = buf_.data() + used_;
  used_ += n;
  return p;
}

namespace {

std::string resolve_prefix(const FamilyInfo& f, const Checkpoint& ck) {
  for (std::string_view p : f.tensor_prefixes) {
    if (ck.find(std::string(p) + std::string(f.probe_tensor)) != nullptr) return std::string(p);
  }
  return std::string(f.tensor_prefixes.front());  // the missing-tensor error will name it
}

std::uint64_t layout_hash(const StateLayout& s) {
  Hasher h;
  for (const auto& l : s.layers) {
    const std::int64_t fields[] = {
        static_cast<std::int64_t>(l.kind),     l.n_kv_heads,   l.head_dim,
        static_cast<std::int64_t>(l.kv_dtype), l.state_floats, l.conv_floats};
    h.update(fields, sizeof(fields));
  }
  return h.digest();
}

}  // namespace

struct Model::ChunkBuf {
  std::vector<ChunkRows> rows;
};

Model::Model() = default;
Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::load(const std::string& dir, const LoadOptions& opts) {
  if (opts.max_batch_tokens < 1 || opts.max_logit_rows < 1) {
    return Error(StatusCode::kInvalidArgument, "max_batch_tokens and max_logit_rows must be >= 1");
  }
  RECUR_ASSIGN_OR_RETURN(Checkpoint ck, Checkpoint::open(dir));
  RECUR_ASSIGN_OR_RETURN(const FamilyInfo* family, find_family(ck.config()));
  std::unique_ptr<Model> m(new Model());
  m->checkpoint_ = std::make_unique<Checkpoint>(std::move(ck));
  m->family_ = std::string(family->name);
  m->opts_ = opts;
  RECUR_ASSIGN_OR_RETURN(
      m->impl_, family->create(m->checkpoint_->config(), resolve_prefix(*family, *m->checkpoint_)));
  RECUR_ASSIGN_OR_RETURN(std::optional<QuantizationConfig> quant,
                         m->checkpoint_->config().quantization());
  if (opts.quantize_bits != 0 &&
      !k::quant_format_supported(opts.quantize_bits, opts.quantize_group_size)) {
    return Error(StatusCode::kInvalidArgument,
                 "--quantize: {} bits in groups of {} is not supported; supported: 4 or 8 bits "
                 "(q4, q8) in groups of 32, 64 or 128",
                 opts.quantize_bits, opts.quantize_group_size);
  }
  if (opts.progress != nullptr) {
    opts.progress->set_total(static_cast<std::int64_t>(m->checkpoint_->n_weight_bytes()));
  }
  m->quantized_ = std::make_unique<QuantizedStore>();
  RECUR_RETURN_IF_ERROR(bind_tensors(*m->impl_, *m->checkpoint_, quant, opts, family->name,
                                     m->quantized_.get(), &m->tensors_));
  m->layout_ = m->impl_->state_layout();
  m->fingerprint_ = hash_combine(hash_combine(hash64(m->family_), layout_hash(m->layout_)),
                                 m->checkpoint_->content_hash());
  // Quantized on load, the same checkpoint computes other numbers: its snapshots are its own.
  if (opts.quantize_bits != 0) {
    const std::int64_t q[2] = {opts.quantize_bits, opts.quantize_group_size};
    m->fingerprint_ = hash_combine(m->fingerprint_, hash64(q, sizeof(q)));
  }
  const std::int64_t rows = opts.max_batch_tokens, d = m->impl_->d_model();
  m->scratch_ = std::make_unique<Scratch>();
  m->scratch_->reserve_floats(rows * m->impl_->scratch_floats_per_row());
  m->h_.resize(static_cast<std::size_t>(rows * d));
  m->h_logit_.resize(static_cast<std::size_t>(opts.max_logit_rows * d));
  m->logits_.resize(static_cast<std::size_t>(opts.max_logit_rows * m->impl_->vocab_size()));
  m->ids_.resize(static_cast<std::size_t>(rows));
  m->positions_.resize(static_cast<std::size_t>(rows));
  m->logit_src_rows_.resize(static_cast<std::size_t>(opts.max_logit_rows));
  m->chunks_ = std::make_unique<ChunkBuf>();
  m->chunks_->rows.reserve(static_cast<std::size_t>(rows));
  return m;
}

std::int64_t Model::vocab_size() const { return impl_->vocab_size(); }
std::int64_t Model::d_model() const { return impl_->d_model(); }
std::int64_t Model::n_layers() const { return impl_->n_layers(); }
const std::vector<std::int64_t>& Model::eos_ids() const { return checkpoint_->eos_ids(); }
std::size_t Model::weight_bytes() const { return checkpoint_->n_weight_bytes(); }

std::int64_t Model::trained_context() const {
  // transformers' names for it across the families' configs (text_config first, as ConfigJson
  // looks keys up); a malformed value counts as none rather than failing a loaded model.
  for (const char* key : {"max_position_embeddings", "max_sequence_length", "n_positions",
                          "seq_length", "max_seq_len"}) {
    auto v = checkpoint_->config().get_int(key, 0);
    if (v.is_ok() && *v > 0) return *v;
  }
  return 0;
}
std::size_t Model::quantized_bytes() const { return quantized_->bytes; }

std::unique_ptr<SequenceState> Model::new_sequence() const {
  return std::make_unique<SequenceState>(&layout_, fingerprint_);
}

Status Model::validate(std::span<const SeqChunk> batch, std::int64_t* n_rows,
                       std::int64_t* n_logit_rows) const {
  *n_rows = 0;
  *n_logit_rows = 0;
  if (batch.empty()) return Error(StatusCode::kInvalidArgument, "forward of an empty batch");
  const std::int64_t vocab = impl_->vocab_size();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const SeqChunk& c = batch[i];
    if (c.seq == nullptr || c.tokens.empty()) {
      return Error(StatusCode::kInvalidArgument, "chunk {} has no sequence or no tokens", i);
    }
    if (c.seq->fingerprint() != fingerprint_) {
      return Error(StatusCode::kInvalidArgument, "chunk {}: sequence belongs to another model", i);
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (batch[j].seq == c.seq) {
        return Error(StatusCode::kInvalidArgument, "chunks {} and {} share one sequence", j, i);
      }
    }
    for (std::int32_t t : c.tokens) {
      if (t < 0 || t >= vocab) {
        return Error(StatusCode::kInvalidArgument, "chunk {}: token id {} outside [0, {})", i, t,
                     vocab);
      }
    }
    const auto n = static_cast<std::int64_t>(c.tokens.size());
    if (c.seq->n_captures() > 0) {
      const std::int64_t pos0 = c.seq->n_tokens();
      for (std::int64_t k = 0; k < c.seq->n_captures(); ++k) {
        const std::int64_t p = c.seq->capture_position(static_cast<std::size_t>(k));
        if (p <= pos0 || p >= pos0 + n || pos0 + n - p > c.seq->capture_tail_limit()) {
          return Error(StatusCode::kInvalidArgument,
                       "chunk {} covers tokens {}..{}: a capture at {} must lie inside it, at "
                       "most {} tokens before its end",
                       i, pos0, pos0 + n, p, c.seq->capture_tail_limit());
        }
      }
    }
    *n_rows += n;
    *n_logit_rows += c.logits == LogitsWanted::kAll ? n : c.logits == LogitsWanted::kLast ? 1 : 0;
  }
  if (*n_rows > opts_.max_batch_tokens || *n_logit_rows > opts_.max_logit_rows) {
    return Error(StatusCode::kOutOfRange,
                 "batch of {} tokens / {} logit rows exceeds the limits {} / {}", *n_rows,
                 *n_logit_rows, opts_.max_batch_tokens, opts_.max_logit_rows);
  }
  return Status::ok();
}

Result<Logits> Model::forward(ThreadPool& pool, std::span<const SeqChunk> batch) {
  // One caller at a time: the scratch and logit buffers are the model's own. Two engine threads
  // on one model would silently mix their activations, so that bug aborts here instead.
  RECUR_CHECK_MSG(!in_forward_.exchange(true), "Model::forward called from two threads at once");
  struct Release {
    std::atomic<bool>& flag;
    ~Release() { flag.store(false); }
  } release{in_forward_};
  std::int64_t n_rows = 0, n_logit = 0;
  RECUR_RETURN_IF_ERROR(validate(batch, &n_rows, &n_logit));
  auto& chunks = chunks_->rows;
  chunks.clear();
  std::int64_t row = 0, li = 0;
  for (const SeqChunk& c : batch) {
    const auto n = static_cast<std::int64_t>(c.tokens.size());
    const std::int64_t pos0 = c.seq->n_tokens();
    chunks.push_back({.seq = c.seq, .row0 = row, .n_rows = n, .pos0 = pos0});
    c.seq->reserve_tokens(pos0 + n);
    for (std::int64_t i = 0; i < n; ++i) {
      ids_[static_cast<std::size_t>(row + i)] = c.tokens[static_cast<std::size_t>(i)];
      positions_[static_cast<std::size_t>(row + i)] = static_cast<std::int32_t>(pos0 + i);
      const bool want =
          c.logits == LogitsWanted::kAll || (c.logits == LogitsWanted::kLast && i == n - 1);
      if (want) logit_src_rows_[static_cast<std::size_t>(li++)] = row + i;
    }
    row += n;
  }
  const std::int64_t d = impl_->d_model();
  {
    const stages::Scope stage("embedding");
    k::embedding_rows(pool, impl_->embedding(), ids_.data(), n_rows, h_.data());
  }
  ForwardCtx ctx{.pool = &pool,
                 .n_rows = n_rows,
                 .chunks = chunks,
                 .positions = positions_.data(),
                 .scratch = scratch_.get()};
  {
    const stages::Scope stage("layers");
    impl_->forward_layers(ctx, h_.data());
  }
  for (std::int64_t i = 0; i < n_logit; ++i) {
    std::memcpy(h_logit_.data() + i * d,
                h_.data() + logit_src_rows_[static_cast<std::size_t>(i)] * d,
                static_cast<std::size_t>(d) * sizeof(float));
  }
  if (n_logit > 0) {
    const stages::Scope stage("head");
    impl_->final_norm(h_logit_.data(), n_logit);
    k::matmul(pool, h_logit_.data(), n_logit, impl_->lm_head(), logits_.data());
    impl_->finish_logits(logits_.data(), n_logit);
  }
  for (const ChunkRows& c : chunks) c.seq->advance(c.n_rows);
  return Logits{.data = logits_.data(), .n_rows = n_logit, .vocab_size = impl_->vocab_size()};
}

Result<StateLayout> state_layout_from_config(const std::string& config_json_text) {
  RECUR_ASSIGN_OR_RETURN(ConfigJson c, ConfigJson::parse(config_json_text, "config.json"));
  RECUR_ASSIGN_OR_RETURN(const FamilyInfo* family, find_family(c));
  RECUR_ASSIGN_OR_RETURN(auto impl, family->create(c, std::string(family->tensor_prefixes[0])));
  return impl->state_layout();
}

namespace {

// Lists what a family visits, binding nothing.
class ListingVisitor final : public TensorVisitor {
 public:
  void matrix(const std::string& name, std::int64_t rows, std::int64_t cols, k::WeightView*,
              Need) override {
    out.push_back({name, {rows, cols}});
  }
  void vector(const std::string& name, std::vector<std::int64_t> shape, std::vector<float>*,
              Need) override {
    out.push_back({name, std::move(shape)});
  }
  void expert_matrices(const std::string& p, ExpertProj proj, std::int64_t rows, std::int64_t cols,
                       const ExpertLayout& layout, std::vector<k::WeightView>* slots) override {
    if (layout.per_expert) {
      TensorVisitor::expert_matrices(p, proj, rows, cols, layout, slots);
      return;
    }
    const auto n = static_cast<std::int64_t>(slots->size());
    if (proj == ExpertProj::kGate) out.push_back({p + layout.fused_gate_up, {n, 2 * rows, cols}});
    if (proj == ExpertProj::kUp && !layout.gated) {
      out.push_back({p + layout.fused_gate_up, {n, rows, cols}});
    }
    if (proj == ExpertProj::kDown) out.push_back({p + layout.fused_down, {n, rows, cols}});
  }
  // The released MXFP4 layout.
  void interleaved_experts(const std::string& p, std::int64_t d_ff, std::int64_t d_model,
                           std::vector<k::WeightView>* gate, std::vector<k::WeightView>*,
                           std::vector<k::WeightView>*) override {
    const auto n = static_cast<std::int64_t>(gate->size());
    for (auto [name, rows, cols] :
         {std::tuple{"gate_up_proj", 2 * d_ff, d_model}, std::tuple{"down_proj", d_model, d_ff}}) {
      out.push_back({.name = p + name + "_blocks", .shape = {n, rows, cols / 32, 16}, .u8 = true});
      out.push_back({.name = p + name + "_scales", .shape = {n, rows, cols / 32}, .u8 = true});
    }
  }
  std::vector<TensorEntry> out;
};

}  // namespace

Result<std::vector<TensorEntry>> tensors_from_config(const std::string& config_json_text) {
  RECUR_ASSIGN_OR_RETURN(ConfigJson c, ConfigJson::parse(config_json_text, "config.json"));
  RECUR_ASSIGN_OR_RETURN(const FamilyInfo* family, find_family(c));
  RECUR_ASSIGN_OR_RETURN(auto impl, family->create(c, std::string(family->tensor_prefixes[0])));
  ListingVisitor v;
  impl->visit_tensors(v);
  return std::move(v.out);
}

Result<std::int64_t> snapshot_bytes_from_config(const std::string& config_json_text,
                                                std::int64_t n_tokens) {
  RECUR_ASSIGN_OR_RETURN(StateLayout s, state_layout_from_config(config_json_text));
  return s.snapshot_bytes(n_tokens);
}

}  // namespace recur::model
