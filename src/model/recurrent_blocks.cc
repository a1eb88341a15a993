// The recurrent mixers over the kernels: Gated DeltaNet (Qwen3.5, Qwen3-Next) and Mamba2, with
// their shared causal conv. Row-wise work runs on the whole batch at once; the conv and the
// recurrences carry state and run per sequence chunk (blocks.cc has the rest of the blocks).
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "model/blocks.h"
#include "model/capture.h"
#include "util/check.h"
#include "util/stage_times.h"

namespace recur::model {

namespace k = recur::kernels;

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
  pool.run_blocks(n, 16, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
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
    ctx.pool->run_blocks(rows, 16, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) per_row(t);
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
  ctx.pool->run_blocks(n, 16, [&](std::int64_t t0, std::int64_t t1) {
    float* ot = o + t0 * o_width;
    k::rms_norm_gated(ot, z + t0 * o_width, w.norm.w.data(), ot,
                      {.n_rows = (t1 - t0) * hv, .width = w.v_dim}, w.norm.eps);
  });
  k::matmul(*ctx.pool, o, n, w.out, out);
}

// ---- Mamba2 mixer (spec 4.3)
// ---------------------------------------------------------------------

void visit_mamba2(TensorVisitor& v, const std::string& p, std::int64_t d_model, Mamba2W* w) {
  const std::string m = p + w->module;
  v.matrix(m + "in_proj.weight", w->in_width(), d_model, &w->in);
  if (w->proj_bias) v.vector(m + "in_proj.bias", {w->in_width()}, &w->in_bias);
  v.vector(m + "conv1d.weight", {w->conv_dim(), 1, w->conv_kernel}, &w->conv);
  conv_taps_major(&w->conv, w->conv_dim(), w->conv_kernel);
  if (w->conv_bias_present) v.vector(m + "conv1d.bias", {w->conv_dim()}, &w->conv_bias);
  v.vector(m + "dt_bias", {w->n_heads}, &w->dt_bias);
  v.vector(m + "A_log", {w->n_heads}, &w->a_log);
  v.vector(m + "D", {w->n_heads}, &w->d);
  if (w->gate != Mamba2W::Gate::kNoNorm) visit_norm(v, m + "norm.weight", w->d_inner(), &w->norm);
  v.matrix(m + "out_proj.weight", d_model, w->d_inner(), &w->out);
  if (w->proj_bias) v.vector(m + "out_proj.bias", {d_model}, &w->out_bias);
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
  add_bias(zx, w.in_bias, n);
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
  const std::int64_t norm_groups = w.norm_whole_row ? 1 : w.n_groups;
  const std::int64_t gs = di / norm_groups;
  switch (w.gate) {
    case Mamba2W::Gate::kNormAfterGate:
      // Per-group normalisation (mamba_ssm / llama.cpp) unless the family's norm takes the row.
      k::rms_norm_gate_first(y, z, w.norm.w.data(), y, {.n_rows = n, .width = di}, gs, w.norm.eps);
      break;
    case Mamba2W::Gate::kNormBeforeGate:
      // Each group has its own slice of the weight (HF weight.view(G, d_inner / G)).
      for (std::int64_t g = 0; g < norm_groups; ++g) {
        k::rms_norm_gated(y + g * gs, z + g * gs, w.norm.w.data() + g * gs, y + g * gs,
                          {.n_rows = n, .width = gs, .x_stride = di, .y_stride = di}, w.norm.eps);
      }
      break;
    case Mamba2W::Gate::kNoNorm:
      k::swiglu(z, y, y, n * di);
      break;
  }
  k::matmul(*ctx.pool, y, n, w.out, out);
  add_bias(out, w.out_bias, n);
}

}  // namespace recur::model
