// LFM2's gated short convolution, from transformers' Lfm2ShortConv (slow_forward) and mlx-lm's
// lfm2.py ShortConv: y = out_proj(C ⊙ conv(B ⊙ x)) with [B | C | x] = in_proj(h). The element-wise
// gates are per row; the conv runs per sequence chunk on its carried window, so a row's bytes
// never depend on the batch or on how the prompt was split.
#include "model/short_conv.h"

#include "model/blocks.h"
#include "model/capture.h"
#include "model/state.h"

namespace recur::model {

namespace k = recur::kernels;

void visit_short_conv(TensorVisitor& v, const std::string& p, ShortConvW* w) {
  const std::int64_t d = w->width;
  v.matrix(p + "conv.in_proj.weight", 3 * d, d, &w->in);
  v.vector(p + "conv.conv.weight", {d, 1, w->kernel}, &w->conv);
  conv_taps_major(&w->conv, d, w->kernel);
  v.matrix(p + "conv.out_proj.weight", d, d, &w->out);
  if (w->bias) {
    v.vector(p + "conv.in_proj.bias", {3 * d}, &w->in_bias);
    v.vector(p + "conv.conv.bias", {d}, &w->conv_bias);
    v.vector(p + "conv.out_proj.bias", {d}, &w->out_bias);
  }
}

std::int64_t short_conv_scratch_per_row(const ShortConvW& w) { return 4 * w.width; }

LayerStateSpec short_conv_state(const ShortConvW& w) {
  return {.kind = LayerStateSpec::Kind::kRecurrent,
          .state_floats = 0,
          .conv_floats = (w.kernel - 1) * w.width};
}

void short_conv_block(ForwardCtx& ctx, const ShortConvW& w, const float* x, float* out) {
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, d = w.width;
  float* bcx = ctx.scratch->take(n * 3 * d);  // [n, B | C | x]
  float* y = ctx.scratch->take(n * d);        // [n, d] conv output, then gated by C
  k::matmul(*ctx.pool, x, n, w.in, bcx);
  for (std::int64_t r = 0; r < n && w.bias; ++r) k::add(bcx + r * 3 * d, w.in_bias.data(), 3 * d);
  // B ⊙ x in place of x: the conv's input, and what its window keeps.
  for (std::int64_t r = 0; r < n; ++r) {
    const float* b = bcx + r * 3 * d;
    float* bx = bcx + r * 3 * d + 2 * d;
    for (std::int64_t i = 0; i < d; ++i) bx[i] *= b[i];
  }
  const float* conv_bias = w.conv_bias.empty() ? nullptr : w.conv_bias.data();
  ctx.pool->run(ctx.chunks.size(), [&](std::size_t i) {
    const ChunkRows& c = ctx.chunks[i];
    capture_conv_windows(c, w.layer, bcx + c.row0 * 3 * d + 2 * d, 3 * d, d, w.kernel);
    // The window is all the state there is: the (empty) recurrent part is captured as well.
    for (const ChunkCapture& cap : captures_in(c)) {
      c.seq->capture_recurrent(cap.index, w.layer, c.seq->conv_window(w.layer));
    }
    k::causal_conv1d(bcx + c.row0 * 3 * d + 2 * d, w.conv.data(), conv_bias,
                     c.seq->conv_window(w.layer), y + c.row0 * d,
                     {.n_tokens = c.n_rows,
                      .channels = d,
                      .kernel = w.kernel,
                      .x_stride = 3 * d,
                      .y_stride = d,
                      .apply_silu = false});
  });
  for (std::int64_t r = 0; r < n; ++r) {
    const float* gate = bcx + r * 3 * d + d;
    float* yr = y + r * d;
    for (std::int64_t i = 0; i < d; ++i) yr[i] *= gate[i];
  }
  k::matmul(*ctx.pool, y, n, w.out, out);
  for (std::int64_t r = 0; r < n && w.bias; ++r) k::add(out + r * d, w.out_bias.data(), d);
}

}  // namespace recur::model
