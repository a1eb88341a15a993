// Block implementations over the kernels. Row-wise work (projections, norms, gates) runs on the
// whole batch at once; work that carries state (K/V append, attention, conv, recurrences) runs per
// sequence chunk. Every step is per row or per sequence, so a row's bytes never depend on the
// batch.
#include "model/blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>
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
  if (n->zero_centred && !v.norms_hold_one()) {
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

// y[r] += b for each of n rows of b.size() floats (a Linear's bias); no-op for an empty b.
void add_bias(float* y, const std::vector<float>& b, std::int64_t n) {
  const auto width = static_cast<std::int64_t>(b.size());
  for (std::int64_t r = 0; r < n && width > 0; ++r) k::add(y + r * width, b.data(), width);
}

// kernels::rope's pairing and f32 arithmetic with the frequencies taken from a table
// (AttentionW::inv_freq, e.g. llama3-scaled) instead of computed from theta.
void rope_from_table(float* x, const std::int32_t* positions, const k::RopeShape& shape,
                     const std::vector<float>& inv_freq) {
  const std::int64_t half = shape.rotary_dim / 2;
  RECUR_CHECK(static_cast<std::int64_t>(inv_freq.size()) == half);
  const std::int64_t hs = shape.head_stride != 0 ? shape.head_stride : shape.head_dim;
  const std::int64_t ts = shape.token_stride != 0 ? shape.token_stride : shape.n_heads * hs;
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const auto pos = static_cast<float>(positions[t]);
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[static_cast<std::size_t>(i)];
      const float c = std::cos(angle), s = std::sin(angle);
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
  rope_from_table(x, positions, shape, w.inv_freq);
}
}  // namespace

void visit_attention(TensorVisitor& v, const std::string& p, std::int64_t d_model, AttentionW* w) {
  const std::int64_t hd = w->head_dim;
  const std::string m = p + w->module;
  v.matrix(m + "q_proj.weight", w->n_heads * q_head_width(*w), d_model, &w->q);
  v.matrix(m + "k_proj.weight", w->n_kv_heads * hd, d_model, &w->k);
  v.matrix(m + "v_proj.weight", w->n_kv_heads * hd, d_model, &w->v);
  v.matrix(m + "o_proj.weight", d_model, w->n_heads * hd, &w->o);
  if (w->qk_norm) {
    visit_norm(v, m + "q_norm.weight", hd, &w->q_norm);
    visit_norm(v, m + "k_norm.weight", hd, &w->k_norm);
  }
  if (w->bias) {
    v.vector(m + "q_proj.bias", {w->q.rows}, &w->q_bias);
    v.vector(m + "k_proj.bias", {w->k.rows}, &w->k_bias);
    v.vector(m + "v_proj.bias", {w->v.rows}, &w->v_bias);
    v.vector(m + "o_proj.bias", {d_model}, &w->o_bias);
  }
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
                              .kv_head_stride = c.seq->capacity_tokens() * hd}});
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
                                   .kv_head_stride = 2 * slots * hd};
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
  const auto n_tasks = static_cast<std::size_t>((n + kRowsPerTask - 1) / kRowsPerTask);
  ctx.pool->run(n_tasks, [&](std::size_t task) {
    const std::int64_t t0 = static_cast<std::int64_t>(task) * kRowsPerTask;
    const std::int64_t m = std::min(kRowsPerTask, n - t0);
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
    ctx.pool->run(n_tasks, [&](std::size_t task) {
      const std::int64_t t0 = static_cast<std::int64_t>(task) * kRowsPerTask;
      const std::int64_t t1 = std::min(n, t0 + kRowsPerTask);
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
  v.matrix(m + "gate_proj.weight", d_ff, d_model, &w->gate);
  v.matrix(m + "up_proj.weight", d_ff, d_model, &w->up);
  v.matrix(m + "down_proj.weight", d_model, d_ff, &w->down);
  if (w->bias) {
    v.vector(m + "gate_proj.bias", {d_ff}, &w->gate_bias);
    v.vector(m + "up_proj.bias", {d_ff}, &w->up_bias);
    v.vector(m + "down_proj.bias", {d_model}, &w->down_bias);
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
  ctx.pool->run(static_cast<std::size_t>((total + kBlock - 1) / kBlock), [&](std::size_t b) {
    const std::int64_t begin = static_cast<std::int64_t>(b) * kBlock;
    k::swiglu(g + begin, u + begin, g + begin, std::min(kBlock, total - begin));
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
  ctx.pool->run(static_cast<std::size_t>((total + kBlock - 1) / kBlock), [&](std::size_t b) {
    const std::int64_t begin = static_cast<std::int64_t>(b) * kBlock;
    k::geglu(g + begin, u + begin, g + begin, std::min(kBlock, total - begin));
  });
  k::matmul(*ctx.pool, g, n, w.down, out);
}

// ---- Gated DeltaNet (spec 2.5)
// -------------------------------------------------------------------

void visit_gated_delta(TensorVisitor& v, const std::string& p, std::int64_t d_model,
                       GatedDeltaW* w) {
  const std::int64_t hv = w->n_v_heads, vd = w->v_dim;
  if (w->interleaved) {
    v.matrix(p + "linear_attn.in_proj_qkvz.weight", w->conv_dim() + hv * vd, d_model, &w->in_qkv);
    v.matrix(p + "linear_attn.in_proj_ba.weight", 2 * hv, d_model, &w->in_b);
  } else {
    v.matrix(p + "linear_attn.in_proj_qkv.weight", w->conv_dim(), d_model, &w->in_qkv);
    v.matrix(p + "linear_attn.in_proj_z.weight", hv * vd, d_model, &w->in_z);
    v.matrix(p + "linear_attn.in_proj_b.weight", hv, d_model, &w->in_b);
    v.matrix(p + "linear_attn.in_proj_a.weight", hv, d_model, &w->in_a);
  }
  v.vector(p + "linear_attn.conv1d.weight", {w->conv_dim(), 1, w->conv_kernel}, &w->conv);
  conv_taps_major(&w->conv, w->conv_dim(), w->conv_kernel);
  v.vector(p + "linear_attn.dt_bias", {hv}, &w->dt_bias);
  v.vector(p + "linear_attn.A_log", {hv}, &w->a_log);
  visit_norm(v, p + "linear_attn.norm.weight", vd, &w->norm);
  v.matrix(p + "linear_attn.out_proj.weight", d_model, hv * vd, &w->out);
}

std::int64_t gated_delta_scratch_per_row(const GatedDeltaW& w) {
  const std::int64_t raw =
      w.interleaved ? w.conv_dim() + w.n_v_heads * w.v_dim + 2 * w.n_v_heads : 0;
  return 2 * w.conv_dim() + 2 * w.n_v_heads * w.v_dim + 4 * w.n_v_heads + raw;
}

namespace {

// Qwen3-Next's in_proj_qkvz / in_proj_ba outputs (rows [n, cd + Hv·Dv] and [n, 2·Hv], grouped
// per key head) to the flat [q | k | v], z, b and a of Qwen3.5's layout (spec 3.3): value head
// g·r + i is the i-th of key head g's r value heads.
void deinterleave_gdn(ThreadPool& pool, const GatedDeltaW& w, std::int64_t n, const float* qkvz,
                      const float* ba, float* mixed, float* z, float* b, float* a) {
  const std::int64_t hk = w.n_k_heads, dk = w.k_dim, r = w.n_v_heads / hk;
  const std::int64_t rv = r * w.v_dim, cd = w.conv_dim(), zw = w.n_v_heads * w.v_dim;
  const std::int64_t group = 2 * dk + 2 * rv;
  const auto copy = [](const float* from, std::int64_t count, float* to) {
    std::copy(from, from + count, to);
  };
  // Blocks of tokens on the pool: a 512-token prompt moves 50 MB here (Qwen3-Next).
  constexpr std::int64_t kRowsPerTask = 16;
  pool.run(static_cast<std::size_t>((n + kRowsPerTask - 1) / kRowsPerTask), [&](std::size_t task) {
    const std::int64_t t0 = static_cast<std::int64_t>(task) * kRowsPerTask;
    for (std::int64_t t = t0; t < std::min(n, t0 + kRowsPerTask); ++t) {
      const float* in = qkvz + t * (cd + zw);
      float* m = mixed + t * cd;
      for (std::int64_t g = 0; g < hk; ++g) {
        const float* src = in + g * group;
        copy(src, dk, m + g * dk);
        copy(src + dk, dk, m + hk * dk + g * dk);
        copy(src + 2 * dk, rv, m + 2 * hk * dk + g * rv);
        copy(src + 2 * dk + rv, rv, z + t * zw + g * rv);
        copy(ba + t * 2 * w.n_v_heads + g * 2 * r, r, b + t * w.n_v_heads + g * r);
        copy(ba + t * 2 * w.n_v_heads + g * 2 * r + r, r, a + t * w.n_v_heads + g * r);
      }
    }
  });
}

// A chunk of at least this many rows (a prompt's) runs its conv as channel slices on the pool.
constexpr std::int64_t kConvSplitRows = 32;
constexpr std::int64_t kConvSliceChannels = 256;  // a multiple of the conv kernel's 16 lanes

// Every chunk's causal conv of x (rows of x_stride) into y (rows of `channels`), over its
// sequence's conv window, after the window's interior captures; then per_row(t) for each row
// (nullptr: none).
// One task per chunk left the other threads idle through a whole prompt's conv and q/k norms
// (a tenth of a hybrid's prefill): a long chunk runs channel slices, then row ranges, on the pool.
// Channels and rows are independent, so the bytes are those of one task per chunk.
template <class PerRow>
void conv_chunks(ForwardCtx& ctx, std::size_t layer, const float* x, std::int64_t x_stride,
                 const float* conv_w, const float* bias, std::int64_t channels, std::int64_t kernel,
                 float* y, PerRow&& per_row) {
  constexpr bool kPerRow = !std::is_same_v<std::decay_t<PerRow>, std::nullptr_t>;
  const auto conv = [&](const ChunkRows& c, std::int64_t c0, std::int64_t c1) {
    const k::Conv1dShape shape{.n_tokens = c.n_rows,
                               .channels = c1 - c0,
                               .kernel = kernel,
                               .x_stride = x_stride,
                               .y_stride = channels,
                               .tap_stride = channels};
    k::causal_conv1d(x + c.row0 * x_stride + c0, conv_w + c0, bias != nullptr ? bias + c0 : nullptr,
                     c.seq->conv_window(layer) + c0, y + c.row0 * channels + c0, shape);
  };
  std::int64_t longest = 0;
  for (const ChunkRows& c : ctx.chunks) longest = std::max(longest, c.n_rows);
  if (longest < kConvSplitRows || ctx.pool->n_threads() == 1) {
    ctx.pool->run(ctx.chunks.size(), [&](std::size_t i) {
      const ChunkRows& c = ctx.chunks[i];
      capture_conv_windows(c, layer, x + c.row0 * x_stride, x_stride, channels, kernel);
      conv(c, 0, channels);
      if constexpr (kPerRow) {
        for (std::int64_t t = c.row0; t < c.row0 + c.n_rows; ++t) per_row(t);
      }
    });
    return;
  }
  // The captures read the windows before any slice updates them.
  for (const ChunkRows& c : ctx.chunks) {
    capture_conv_windows(c, layer, x + c.row0 * x_stride, x_stride, channels, kernel);
  }
  const std::int64_t slices = (channels + kConvSliceChannels - 1) / kConvSliceChannels;
  ctx.pool->run(ctx.chunks.size() * static_cast<std::size_t>(slices), [&](std::size_t task) {
    const auto s = static_cast<std::int64_t>(task) % slices;
    const ChunkRows& c = ctx.chunks[task / static_cast<std::size_t>(slices)];
    conv(c, s * kConvSliceChannels, std::min(channels, (s + 1) * kConvSliceChannels));
  });
  if constexpr (kPerRow) {
    std::int64_t rows = 0;
    for (const ChunkRows& c : ctx.chunks) rows = std::max(rows, c.row0 + c.n_rows);
    constexpr std::int64_t kRowsPerTask = 16;
    ctx.pool->run(static_cast<std::size_t>((rows + kRowsPerTask - 1) / kRowsPerTask),
                  [&](std::size_t task) {
                    const std::int64_t t0 = static_cast<std::int64_t>(task) * kRowsPerTask;
                    for (std::int64_t t = t0; t < std::min(rows, t0 + kRowsPerTask); ++t)
                      per_row(t);
                  });
  }
}

}  // namespace

LayerStateSpec gated_delta_state(const GatedDeltaW& w) {
  return {.kind = LayerStateSpec::Kind::kRecurrent,
          .state_floats = w.n_v_heads * w.k_dim * w.v_dim,
          .conv_floats = (w.conv_kernel - 1) * w.conv_dim()};
}

void gated_delta_block(ForwardCtx& ctx, const GatedDeltaW& w, const float* x, float* out) {
  const stages::Scope stage("gated_delta");
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, cd = w.conv_dim(), hv = w.n_v_heads, hk = w.n_k_heads;
  const std::int64_t qk_width = hk * w.k_dim, o_width = hv * w.v_dim;
  float* mixed = ctx.scratch->take(n * cd);   // [n, q | k | v] before the conv
  float* qkv = ctx.scratch->take(n * cd);     // after conv + silu
  float* z = ctx.scratch->take(n * o_width);  // [n, Hv, Dv]
  float* o = ctx.scratch->take(n * o_width);  // [n, Hv, Dv]
  float* b = ctx.scratch->take(n * hv);       // [n, Hv] → beta
  float* a = ctx.scratch->take(n * hv);       // [n, Hv] → g
  float* g = ctx.scratch->take(n * hv);
  float* beta = ctx.scratch->take(n * hv);
  std::optional<stages::Scope> sub(std::in_place, "in_proj");
  if (w.interleaved) {
    float* qkvz = ctx.scratch->take(n * (cd + o_width));
    float* ba = ctx.scratch->take(n * 2 * hv);
    const k::MatmulOut in_proj[] = {{w.in_qkv, qkvz}, {w.in_b, ba}};
    k::matmul_fused(*ctx.pool, x, n, in_proj);
    deinterleave_gdn(*ctx.pool, w, n, qkvz, ba, mixed, z, b, a);
  } else {
    const k::MatmulOut in_proj[] = {{w.in_qkv, mixed}, {w.in_z, z}, {w.in_b, b}, {w.in_a, a}};
    k::matmul_fused(*ctx.pool, x, n, in_proj);
  }
  // Every sequence's conv and q/k norms in one dispatch, then one recurrence dispatch over all
  // their heads (per sequence, a decode step of N sequences waited at 2N barriers per layer).
  // q ← l2norm(q)·Dk^-½, k ← l2norm(k), per head (FLA l2norm, eps 1e-6).
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(w.k_dim));
  sub.emplace("conv");
  conv_chunks(ctx, w.layer, mixed, cd, w.conv.data(), nullptr, cd, w.conv_kernel, qkv,
              [&](std::int64_t t) {
                k::l2_norm(qkv + t * cd, {.n_rows = hk, .width = w.k_dim}, 1e-6f, q_scale);
                k::l2_norm(qkv + t * cd + qk_width, {.n_rows = hk, .width = w.k_dim}, 1e-6f, 1.0f);
              });
  sub.emplace("recurrence");
  k::gated_delta_gates(a, b, w.a_log.data(), w.dt_bias.data(), g, beta, n, hv);
  thread_local std::vector<k::GatedDeltaJob> jobs;
  jobs.clear();
  for (const ChunkRows& c : ctx.chunks) {
    const float* row = qkv + c.row0 * cd;
    jobs.push_back({.in = {.q = row,
                           .k = row + qk_width,
                           .v = row + 2 * qk_width,
                           .g = g + c.row0 * hv,
                           .beta = beta + c.row0 * hv},
                    .state = c.seq->recurrent(w.layer),
                    .out = o + c.row0 * o_width,
                    .shape = {.n_tokens = c.n_rows,
                              .n_k_heads = hk,
                              .n_v_heads = hv,
                              .k_dim = w.k_dim,
                              .v_dim = w.v_dim,
                              .qkv_stride = cd}});
  }
  run_recurrence(
      ctx.chunks, jobs, w.layer,
      [&](std::span<const k::GatedDeltaJob> batch) { k::gated_delta_rule_batch(*ctx.pool, batch); },
      [&](const k::GatedDeltaJob& job, std::int64_t from, std::int64_t to) {
        k::GatedDeltaJob s = job;
        s.in.q += from * cd;
        s.in.k += from * cd;
        s.in.v += from * cd;
        s.in.g += from * hv;
        s.in.beta += from * hv;
        s.out += from * o_width;
        s.shape.n_tokens = to - from;
        return s;
      });
  sub.emplace("out_proj");
  {
    constexpr std::int64_t kRowsPerTask = 16;  // per row: any split gives the same bytes
    ctx.pool->run(static_cast<std::size_t>((n + kRowsPerTask - 1) / kRowsPerTask),
                  [&](std::size_t task) {
                    const std::int64_t t0 = static_cast<std::int64_t>(task) * kRowsPerTask;
                    const std::int64_t m = std::min(kRowsPerTask, n - t0);
                    float* ot = o + t0 * o_width;
                    k::rms_norm_gated(ot, z + t0 * o_width, w.norm.w.data(), ot,
                                      {.n_rows = m * hv, .width = w.v_dim}, w.norm.eps);
                  });
  }
  k::matmul(*ctx.pool, o, n, w.out, out);
}

// ---- Mamba2 mixer (spec 4.3)
// ---------------------------------------------------------------------

void visit_mamba2(TensorVisitor& v, const std::string& p, std::int64_t d_model, Mamba2W* w) {
  const std::string m = p + w->module;
  v.matrix(m + "in_proj.weight", w->in_width(), d_model, &w->in);
  v.vector(m + "conv1d.weight", {w->conv_dim(), 1, w->conv_kernel}, &w->conv);
  conv_taps_major(&w->conv, w->conv_dim(), w->conv_kernel);
  if (w->conv_bias_present) v.vector(m + "conv1d.bias", {w->conv_dim()}, &w->conv_bias);
  v.vector(m + "dt_bias", {w->n_heads}, &w->dt_bias);
  v.vector(m + "A_log", {w->n_heads}, &w->a_log);
  v.vector(m + "D", {w->n_heads}, &w->d);
  if (w->gate != Mamba2W::Gate::kNoNorm) visit_norm(v, m + "norm.weight", w->d_inner(), &w->norm);
  v.matrix(m + "out_proj.weight", d_model, w->d_inner(), &w->out);
}

std::int64_t mamba2_scratch_per_row(const Mamba2W& w) {
  return w.in_width() + w.conv_dim() + 2 * w.d_inner();
}

LayerStateSpec mamba2_state(const Mamba2W& w) {
  return {.kind = LayerStateSpec::Kind::kRecurrent,
          .state_floats = w.n_heads * w.head_dim * w.d_state,
          .conv_floats = (w.conv_kernel - 1) * w.conv_dim()};
}

void mamba2_block(ForwardCtx& ctx, const Mamba2W& w, const float* x, float* out) {
  const stages::Scope stage("mamba2");
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, iw = w.in_width(), cd = w.conv_dim(), di = w.d_inner();
  const std::int64_t gn = w.n_groups * w.d_state;
  float* zx = ctx.scratch->take(n * iw);   // [n, z | xBC | dt]
  float* xbc = ctx.scratch->take(n * cd);  // [n, x | B | C] after conv + silu
  float* y = ctx.scratch->take(n * di);    // [n, H, P]
  float* z = ctx.scratch->take(n * di);    // [n, d_inner], z made contiguous for the gated norm
  k::matmul(*ctx.pool, x, n, w.in, zx);
  if (!w.in_scale.empty()) {
    for (std::int64_t r = 0; r < n; ++r) {
      for (std::int64_t j = 0; j < iw; ++j) zx[r * iw + j] *= w.in_scale[j];
    }
  }
  const float* bias = w.conv_bias.empty() ? nullptr : w.conv_bias.data();
  // Every sequence's conv, then one scan dispatch over all their heads: a decode step of N
  // sequences would otherwise be N serial convs and N scan dispatches per layer, the other
  // threads waiting at each.
  conv_chunks(ctx, w.layer, zx + di, iw, w.conv.data(), bias, cd, w.conv_kernel, xbc, nullptr);
  thread_local std::vector<k::Mamba2Job> jobs;
  jobs.clear();
  for (const ChunkRows& c : ctx.chunks) {
    const float* row = xbc + c.row0 * cd;
    jobs.push_back({.in = {.x = row,
                           .b = row + di,
                           .c = row + di + gn,
                           .dt_raw = zx + c.row0 * iw + di + cd,
                           .dt_bias = w.dt_bias.data(),
                           .a_log = w.a_log.data(),
                           .d = w.d.data()},
                    .state = c.seq->recurrent(w.layer),
                    .y = y + c.row0 * di,
                    .shape = {.n_tokens = c.n_rows,
                              .n_heads = w.n_heads,
                              .head_dim = w.head_dim,
                              .d_state = w.d_state,
                              .n_groups = w.n_groups,
                              .x_stride = cd,
                              .dt_stride = iw,
                              .dt_min = w.dt_min,
                              .dt_max = w.dt_max}});
  }
  run_recurrence(
      ctx.chunks, jobs, w.layer,
      [&](std::span<const k::Mamba2Job> batch) { k::mamba2_scan_batch(*ctx.pool, batch); },
      [&](const k::Mamba2Job& job, std::int64_t from, std::int64_t to) {
        k::Mamba2Job s = job;
        s.in.x += from * cd;
        s.in.b += from * cd;
        s.in.c += from * cd;
        s.in.dt_raw += from * iw;
        s.y += from * di;
        s.shape.n_tokens = to - from;
        return s;
      });
  for (std::int64_t r = 0; r < n; ++r) std::memcpy(z + r * di, zx + r * iw, di * sizeof(float));
  const std::int64_t gs = di / w.n_groups;
  switch (w.gate) {
    case Mamba2W::Gate::kNormAfterGate:
      // Per-group normalisation (mamba_ssm / llama.cpp); equals HF's whole-row form when G = 1.
      k::rms_norm_gate_first(y, z, w.norm.w.data(), y, {.n_rows = n, .width = di}, gs, w.norm.eps);
      break;
    case Mamba2W::Gate::kNormBeforeGate:
      // Each group has its own slice of the weight (HF weight.view(G, d_inner / G)).
      for (std::int64_t g = 0; g < w.n_groups; ++g) {
        k::rms_norm_gated(y + g * gs, z + g * gs, w.norm.w.data() + g * gs, y + g * gs,
                          {.n_rows = n, .width = gs, .x_stride = di, .y_stride = di}, w.norm.eps);
      }
      break;
    case Mamba2W::Gate::kNoNorm:
      k::swiglu(z, y, y, n * di);
      break;
  }
  k::matmul(*ctx.pool, y, n, w.out, out);
}

}  // namespace recur::model
