// Block implementations over the kernels: norms, attention, the dense MLPs (recurrent_blocks.cc
// has Gated DeltaNet and Mamba2). Row-wise work (projections, norms, gates) runs on the whole
// batch at once; work that carries state (K/V append, attention) runs per sequence chunk. Every
// step is per row or per sequence, so a row's bytes never depend on the batch.
#include "model/blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "model/capture.h"
#include "util/check.h"
#include "util/stage_times.h"

namespace recur::model {

namespace k = recur::kernels;

void apply_norm(const NormW& n, const float* x, float* y, std::int64_t n_rows, std::int64_t width) {
  k::rms_norm(x, n.w.data(), y, {.n_rows = n_rows, .width = width}, n.eps);
}

void visit_norm(TensorVisitor& v, const std::string& name, std::int64_t width, NormW* n) {
  v.vector(name, {width}, &n->w);
  if (n->form == NormForm::kGemma || (n->form == NormForm::kZeroCentred && !v.norms_hold_one())) {
    for (float& x : n->w) x = 1.0f + x;
  }
}

// The checkpoint's conv kernel [C, 1, K] as k::causal_conv1d reads it, [K, C]: a decode step
// loads each tap's weights for a block of channels as vectors instead of gathering them K apart.
// Runs as the binding visitor fills `w` (left empty when the tensor failed to bind).
void conv_taps_major(std::vector<float>* w, std::int64_t channels, std::int64_t kernel) {
  if (static_cast<std::int64_t>(w->size()) != channels * kernel) return;
  std::vector<float> taps(w->size());
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t j = 0; j < kernel; ++j) {
      taps[static_cast<std::size_t>(j * channels + c)] =
          (*w)[static_cast<std::size_t>(c * kernel + j)];
    }
  }
  *w = std::move(taps);
}

void add_bias(float* y, const std::vector<float>& b, std::int64_t n) {
  const auto width = static_cast<std::int64_t>(b.size());
  for (std::int64_t r = 0; r < n && width > 0; ++r) k::add(y + r * width, b.data(), width);
}

// ---- attention ---------------------------------------------------------------------------------

namespace {
std::int64_t q_head_width(const AttentionW& w) {
  return w.output_gate ? 2 * w.head_dim : w.head_dim;
}

// Appends the chunk's K/V rows [n, n_kv, hd] (f32) at positions pos0.. of the layer cache, whose
// heads are capacity_tokens() rows apart (SequenceState::k_data).
void append_kv(const AttentionW& w, const ChunkRows& c, const float* k_rows, const float* v_rows) {
  const std::int64_t hd = w.head_dim, width = w.n_kv_heads * hd;
  const std::int64_t head_stride = c.seq->capacity_tokens() * hd;
  std::uint8_t* kc = c.seq->k_data(w.layer);
  std::uint8_t* vc = c.seq->v_data(w.layer);
  for (std::int64_t h = 0; h < w.n_kv_heads; ++h) {
    const std::int64_t at = h * head_stride + c.pos0 * hd;
    if (w.kv_dtype == k::DType::kF32) {
      for (std::int64_t t = 0; t < c.n_rows; ++t) {
        const std::size_t bytes = static_cast<std::size_t>(hd) * sizeof(float);
        std::memcpy(reinterpret_cast<float*>(kc) + at + t * hd, k_rows + t * width + h * hd, bytes);
        std::memcpy(reinterpret_cast<float*>(vc) + at + t * hd, v_rows + t * width + h * hd, bytes);
      }
      continue;
    }
    RECUR_CHECK(w.kv_dtype == k::DType::kBF16);
    auto* kb = reinterpret_cast<std::uint16_t*>(kc) + at;
    auto* vb = reinterpret_cast<std::uint16_t*>(vc) + at;
    for (std::int64_t t = 0; t < c.n_rows; ++t) {
      for (std::int64_t d = 0; d < hd; ++d) {
        kb[t * hd + d] = k::f32_to_bf16(k_rows[t * width + h * hd + d]);
        vb[t * hd + d] = k::f32_to_bf16(v_rows[t * width + h * hd + d]);
      }
    }
  }
}

// kernels::rope's pairing and f32 arithmetic with the frequencies taken from a table
// (AttentionW::inv_freq, e.g. llama3-scaled) instead of computed from theta.
void rope_from_table(float* x, const std::int32_t* positions, const k::RopeShape& shape,
                     const std::vector<float>& inv_freq, float attention_factor) {
  const std::int64_t half = shape.rotary_dim / 2;
  RECUR_CHECK(static_cast<std::int64_t>(inv_freq.size()) == half);
  const std::int64_t hs = shape.head_stride != 0 ? shape.head_stride : shape.head_dim;
  const std::int64_t ts = shape.token_stride != 0 ? shape.token_stride : shape.n_heads * hs;
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const auto pos = static_cast<float>(positions[t]);
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[static_cast<std::size_t>(i)];
      float c = std::cos(angle), s = std::sin(angle);
      if (attention_factor != 1.0f) c *= attention_factor, s *= attention_factor;
      for (std::int64_t h = 0; h < shape.n_heads; ++h) {
        float* xh = x + t * ts + h * hs;
        const float a = xh[i], b = xh[i + half];
        xh[i] = a * c - b * s;
        xh[i + half] = b * c + a * s;
      }
    }
  }
}

void apply_rope(const AttentionW& w, float* x, const std::int32_t* positions,
                const k::RopeShape& shape) {
  if (w.inv_freq.empty()) return k::rope(x, positions, shape, w.rope_theta);
  rope_from_table(x, positions, shape, w.inv_freq, w.rope_attention_factor);
}
}  // namespace

void visit_attention(TensorVisitor& v, const std::string& p, std::int64_t d_model, AttentionW* w) {
  const std::int64_t hd = w->head_dim;
  const std::string m = p + w->module;
  v.matrix(m + "q_proj.weight", w->n_heads * q_head_width(*w), d_model, &w->q);
  v.matrix(m + "k_proj.weight", w->n_kv_heads * hd, d_model, &w->k);
  v.matrix(m + "v_proj.weight", w->n_kv_heads * hd, d_model, &w->v);
  v.matrix(m + w->o_proj + ".weight", d_model, w->n_heads * hd, &w->o);
  if (w->qk_norm) {
    visit_norm(v, m + w->q_norm_name + ".weight", hd, &w->q_norm);
    visit_norm(v, m + w->k_norm_name + ".weight", hd, &w->k_norm);
  }
  if (w->bias) {
    // Sized from the geometry, not the bound matrices: a listing visitor binds nothing.
    v.vector(m + "q_proj.bias", {w->n_heads * q_head_width(*w)}, &w->q_bias);
    v.vector(m + "k_proj.bias", {w->n_kv_heads * hd}, &w->k_bias);
    v.vector(m + "v_proj.bias", {w->n_kv_heads * hd}, &w->v_bias);
    v.vector(m + w->o_proj + ".bias", {d_model}, &w->o_bias);
  }
  if (w->sinks) v.vector(m + "sinks", {w->n_heads}, &w->sink);
}

std::int64_t attention_scratch_per_row(const AttentionW& w) {
  return w.n_heads * q_head_width(w) + 2 * w.n_kv_heads * w.head_dim + w.n_heads * w.head_dim;
}

LayerStateSpec attention_state(const AttentionW& w) {
  return {.kind = LayerStateSpec::Kind::kAttention,
          .n_kv_heads = w.n_kv_heads,
          .n_heads = w.n_heads,
          .head_dim = w.head_dim,
          .kv_dtype = w.kv_dtype,
          .window = w.window};
}

namespace {

float score_scale(const AttentionW& w) {
  return w.scale != 0.0f ? w.scale : 1.0f / std::sqrt(static_cast<float>(w.head_dim));
}

const float* sinks_of(const AttentionW& w) { return w.sinks ? w.sink.data() : nullptr; }

// One token's K or V row of one kv head (f32) into `slot` of a head's buffer, in the KV dtype.
void store_row(const AttentionW& w, std::uint8_t* head, std::int64_t slot, const float* row) {
  const std::int64_t hd = w.head_dim;
  if (w.kv_dtype == k::DType::kF32) {
    std::memcpy(reinterpret_cast<float*>(head) + slot * hd, row,
                static_cast<std::size_t>(hd) * sizeof(float));
    return;
  }
  RECUR_CHECK(w.kv_dtype == k::DType::kBF16);
  auto* dst = reinterpret_cast<std::uint16_t*>(head) + slot * hd;
  for (std::int64_t d = 0; d < hd; ++d) dst[d] = k::f32_to_bf16(row[d]);
}

// Rows [r0, r0 + n) of a chunk into the ring: position p at slot p % R and at slot p % R + R
// (LayerStateSpec::window), so every window of positions is one contiguous run of slots.
void append_ring(const AttentionW& w, const ChunkRows& c, std::int64_t r0, std::int64_t n,
                 const float* k_rows, const float* v_rows) {
  const std::int64_t hd = w.head_dim, width = w.n_kv_heads * hd;
  const std::int64_t slots = attention_state(w).ring_slots();
  const std::int64_t head_bytes = 2 * slots * hd * k::dtype_bytes(w.kv_dtype);
  for (std::int64_t h = 0; h < w.n_kv_heads; ++h) {
    std::uint8_t* kh = c.seq->k_data(w.layer) + h * head_bytes;
    std::uint8_t* vh = c.seq->v_data(w.layer) + h * head_bytes;
    for (std::int64_t r = r0; r < r0 + n; ++r) {
      const std::int64_t slot = (c.pos0 + r) % slots;
      for (std::int64_t copy : {slot, slot + slots}) {
        store_row(w, kh, copy, k_rows + r * width + h * hd);
        store_row(w, vh, copy, v_rows + r * width + h * hd);
      }
    }
  }
}

// Full causal attention: every sequence's K/V appended, then one dispatch for all of them (a
// decode step of N sequences would otherwise be N dispatches of a few microseconds each, per
// layer).
void full_attention(ForwardCtx& ctx, const AttentionW& w, const float* q, const float* kr,
                    const float* vr, float* att) {
  const std::int64_t hd = w.head_dim, qw = q_head_width(w), kv_width = w.n_kv_heads * hd;
  thread_local std::vector<k::AttentionJob> jobs;
  jobs.clear();
  for (const ChunkRows& c : ctx.chunks) {
    append_kv(w, c, kr + c.row0 * kv_width, vr + c.row0 * kv_width);
    jobs.push_back({.q = q + c.row0 * w.n_heads * qw,
                    .k_cache = c.seq->k_data(w.layer),
                    .v_cache = c.seq->v_data(w.layer),
                    .out = att + c.row0 * w.n_heads * hd,
                    .shape = {.n_q = c.n_rows,
                              .pos0 = c.pos0,
                              .n_kv = c.pos0 + c.n_rows,
                              .n_heads = w.n_heads,
                              .n_kv_heads = w.n_kv_heads,
                              .head_dim = hd,
                              .q_head_stride = qw,
                              .scale = score_scale(w),
                              .kv_dtype = w.kv_dtype,
                              .kv_token_stride = hd,
                              .kv_head_stride = c.seq->capacity_tokens() * hd,
                              .sinks = sinks_of(w)}});
  }
  k::attention_batch(*ctx.pool, jobs);
}

// Sliding-window attention over the rings, in pieces of kRingPieceTokens rows per sequence: a
// piece's K/V are written, then its queries read. Queries still inside the first window see
// positions 0.. (slots 0.., not wrapped yet) and share one job, as in full attention; each later
// query gets a job over its own window (pos0 = window - 1 in the job's numbering), so its bytes
// depend on its position alone, never on how the prompt was chunked.
void ring_attention(ForwardCtx& ctx, const AttentionW& w, const float* q, const float* kr,
                    const float* vr, float* att) {
  const std::int64_t hd = w.head_dim, qw = q_head_width(w), kv_width = w.n_kv_heads * hd;
  const std::int64_t slots = attention_state(w).ring_slots(), window = w.window;
  const std::int64_t row_bytes = hd * k::dtype_bytes(w.kv_dtype);
  std::int64_t longest = 0;
  for (const ChunkRows& c : ctx.chunks) longest = std::max(longest, c.n_rows);
  thread_local std::vector<k::AttentionJob> jobs;
  for (std::int64_t p0 = 0; p0 < longest; p0 += kRingPieceTokens) {
    jobs.clear();
    for (const ChunkRows& c : ctx.chunks) {
      const std::int64_t n = std::min(kRingPieceTokens, c.n_rows - p0);
      if (n <= 0) continue;
      append_ring(w, c, p0, n, kr + c.row0 * kv_width, vr + c.row0 * kv_width);
      const k::AttentionShape base{.n_heads = w.n_heads,
                                   .n_kv_heads = w.n_kv_heads,
                                   .head_dim = hd,
                                   .q_head_stride = qw,
                                   .scale = score_scale(w),
                                   .kv_dtype = w.kv_dtype,
                                   .kv_token_stride = hd,
                                   .kv_head_stride = 2 * slots * hd,
                                   .sinks = sinks_of(w)};
      const std::int64_t row0 = c.row0 + p0, pos0 = c.pos0 + p0;
      const std::int64_t first = std::clamp<std::int64_t>(window - pos0, 0, n);
      if (first > 0) {  // positions pos0 .. pos0 + first - 1 < window
        k::AttentionShape s = base;
        s.n_q = first, s.pos0 = pos0, s.n_kv = pos0 + first;
        jobs.push_back({.q = q + row0 * w.n_heads * qw,
                        .k_cache = c.seq->k_data(w.layer),
                        .v_cache = c.seq->v_data(w.layer),
                        .out = att + row0 * w.n_heads * hd,
                        .shape = s});
      }
      for (std::int64_t i = first; i < n; ++i) {
        const std::int64_t start = (pos0 + i - window + 1) % slots;
        k::AttentionShape s = base;
        s.n_q = 1, s.pos0 = window - 1, s.n_kv = window;
        jobs.push_back({.q = q + (row0 + i) * w.n_heads * qw,
                        .k_cache = c.seq->k_data(w.layer) + start * row_bytes,
                        .v_cache = c.seq->v_data(w.layer) + start * row_bytes,
                        .out = att + (row0 + i) * w.n_heads * hd,
                        .shape = s});
      }
    }
    k::attention_batch(*ctx.pool, jobs);
  }
}

}  // namespace

// Spec 0.3 / 2.4: q,k = RoPE(norm(proj(x))); a = softmax(q kᵀ·hd^-½) v; out = o(a [⊙ σ(gate)]).
void attention_block(ForwardCtx& ctx, const AttentionW& w, const float* x, float* out) {
  const stages::Scope stage("attention");
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, hd = w.head_dim, qw = q_head_width(w);
  const std::int64_t kv_width = w.n_kv_heads * hd;
  float* q = ctx.scratch->take(n * w.n_heads * qw);    // [n, n_heads, qw]
  float* kr = ctx.scratch->take(n * kv_width);         // [n, n_kv, hd]
  float* vr = ctx.scratch->take(n * kv_width);         // [n, n_kv, hd]
  float* att = ctx.scratch->take(n * w.n_heads * hd);  // [n, n_heads, hd]
  const k::MatmulOut qkv_out[] = {{w.q, q}, {w.k, kr}, {w.v, vr}};
  std::optional<stages::Scope> sub(std::in_place, "qkv");
  k::matmul_fused(*ctx.pool, x, n, qkv_out);
  // The biases, q/k norms and RoPE of blocks of tokens on the pool: each is per row, so the
  // bytes are a single thread's, and on one thread they were a tenth of a 512-token attention
  // layer (RoPE's sin and cos per token and frequency above all).
  sub.emplace("norm_rope");
  constexpr std::int64_t kRowsPerTask = 16;
  const std::int64_t q_row = w.n_heads * qw;
  ctx.pool->run_blocks(n, kRowsPerTask, [&](std::int64_t t0, std::int64_t t1) {
    const std::int64_t m = t1 - t0;
    float* qt = q + t0 * q_row;
    float* kt = kr + t0 * kv_width;
    add_bias(qt, w.q_bias, m);
    add_bias(kt, w.k_bias, m);
    add_bias(vr + t0 * kv_width, w.v_bias, m);
    if (w.qk_norm) {
      k::rms_norm(qt, w.q_norm.w.data(), qt,
                  {.n_rows = m * w.n_heads, .width = hd, .x_stride = qw, .y_stride = qw},
                  w.q_norm.eps);
      k::rms_norm(kt, w.k_norm.w.data(), kt, {.n_rows = m * w.n_kv_heads, .width = hd},
                  w.k_norm.eps);
    }
    apply_rope(w, qt, ctx.positions + t0,
               {.n_tokens = m,
                .n_heads = w.n_heads,
                .head_dim = hd,
                .rotary_dim = w.rotary_dim,
                .head_stride = qw});
    apply_rope(
        w, kt, ctx.positions + t0,
        {.n_tokens = m, .n_heads = w.n_kv_heads, .head_dim = hd, .rotary_dim = w.rotary_dim});
  });
  sub.emplace("core");
  if (w.window > 0) {
    ring_attention(ctx, w, q, kr, vr, att);
  } else {
    full_attention(ctx, w, q, kr, vr, att);
  }
  if (w.output_gate) {
    sub.emplace("output_gate");
    ctx.pool->run_blocks(n, kRowsPerTask, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t r = t0 * w.n_heads; r < t1 * w.n_heads; ++r)
        k::mul_sigmoid(att + r * hd, q + r * qw + hd, hd);
    });
  }
  sub.emplace("o_proj");
  k::matmul(*ctx.pool, att, n, w.o, out);
  add_bias(out, w.o_bias, n);
}

// ---- SwiGLU MLP --------------------------------------------------------------------------------

void visit_mlp(TensorVisitor& v, const std::string& p, std::int64_t d_model, std::int64_t d_ff,
               MlpW* w) {
  const std::string m = p + w->module;
  v.matrix(m + w->proj[0] + ".weight", d_ff, d_model, &w->gate);
  v.matrix(m + w->proj[1] + ".weight", d_ff, d_model, &w->up);
  v.matrix(m + w->proj[2] + ".weight", d_model, d_ff, &w->down);
  if (w->bias) {
    v.vector(m + w->proj[0] + ".bias", {d_ff}, &w->gate_bias);
    v.vector(m + w->proj[1] + ".bias", {d_ff}, &w->up_bias);
    v.vector(m + w->proj[2] + ".bias", {d_model}, &w->down_bias);
  }
}

std::int64_t mlp_scratch_per_row(const MlpW& w) { return 2 * w.gate.rows; }

void swiglu_mlp(ForwardCtx& ctx, const MlpW& w, const float* x, float* out) {
  const stages::Scope stage("swiglu_mlp");
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, d_ff = w.gate.rows;
  float* g = ctx.scratch->take(n * d_ff);  // [n, d_ff]
  float* u = ctx.scratch->take(n * d_ff);  // [n, d_ff]
  const k::MatmulOut gate_up[] = {{w.gate, g}, {w.up, u}};
  k::matmul_fused(*ctx.pool, x, n, gate_up);
  add_bias(g, w.gate_bias, n);
  add_bias(u, w.up_bias, n);
  if (w.gate_scale != 1.0f) {
    for (std::int64_t i = 0; i < n * d_ff; ++i) g[i] *= w.gate_scale;
  }
  // In blocks on the pool, as geglu_mlp: each element's bytes depend on itself alone.
  constexpr std::int64_t kBlock = 16384;
  const std::int64_t total = n * d_ff;
  ctx.pool->run_blocks(total, kBlock, [&](std::int64_t begin, std::int64_t end) {
    k::swiglu(g + begin, u + begin, g + begin, end - begin);
  });
  k::matmul(*ctx.pool, g, n, w.down, out);
  add_bias(out, w.down_bias, n);
}

// down(gelu_tanh(gate(x)) ⊙ up(x)) (kernels.h geglu). The gating is spread over the pool in fixed
// blocks: each element's bytes depend on itself alone, so the split changes nothing.
void geglu_mlp(ForwardCtx& ctx, const MlpW& w, const float* x, float* out) {
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, d_ff = w.gate.rows;
  float* g = ctx.scratch->take(n * d_ff);  // [n, d_ff]
  float* u = ctx.scratch->take(n * d_ff);  // [n, d_ff]
  const k::MatmulOut gate_up[] = {{w.gate, g}, {w.up, u}};
  k::matmul_fused(*ctx.pool, x, n, gate_up);
  constexpr std::int64_t kBlock = 16384;
  const std::int64_t total = n * d_ff;
  ctx.pool->run_blocks(total, kBlock, [&](std::int64_t begin, std::int64_t end) {
    k::geglu(g + begin, u + begin, g + begin, end - begin);
  });
  k::matmul(*ctx.pool, g, n, w.down, out);
}

}  // namespace recur::model
