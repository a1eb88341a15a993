// LFM2's gated short convolution (docs/model-lfm2.md), the token mixer of its conv layers:
// in_proj splits into B, C and x; the depthwise causal conv (no activation) runs over B ⊙ x, and
// C gates its output before out_proj. Its only state is the conv window (the last K-1 values of
// B ⊙ x), kept as a recurrent layer so snapshots carry it exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/family.h"

namespace recur::model {

struct ShortConvW {
  kernels::WeightView in, out;  // in_proj [3·d, d] (rows B | C | x), out_proj [d, d]
  std::vector<float> conv;      // [K, d] tap-major (HF's [d, 1, K] transposed at load)
  // conv_bias in config.json puts a bias on all three (HF Lfm2ShortConv); empty otherwise.
  std::vector<float> in_bias, conv_bias, out_bias;
  bool bias = false;
  std::int64_t width = 0, kernel = 0;  // d_model, conv_L_cache
  std::size_t layer = 0;
};

// `p` is the layer prefix ("model.layers.N."): reads p + "conv.{in_proj,conv,out_proj}.*".
void visit_short_conv(TensorVisitor& v, const std::string& p, ShortConvW* w);
std::int64_t short_conv_scratch_per_row(const ShortConvW& w);
LayerStateSpec short_conv_state(const ShortConvW& w);
// x, out [n_rows, d_model].
void short_conv_block(ForwardCtx& ctx, const ShortConvW& w, const float* x, float* out);

}  // namespace recur::model
