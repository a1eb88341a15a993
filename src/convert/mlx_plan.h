// The plan of a whole MLX checkpoint from a Hugging Face one's tensor list: each output tensor
// (mlx_layout.h's rules for one tensor) and where its values come from, after the reshaping that
// mlx-lm's sanitize does to experts: per-expert tensors stacked into switch_mlp (qwen3_moe,
// qwen3_next, qwen3_5_moe, lfm2_moe, nemotron_h), fused ones split (transformers 5's
// experts.gate_up_proj, Granite 4.0-H's input_linear, dense Granite's shared_mlp). Both writers
// (the generator, quantize_checkpoint) plan with it, so they write the same layout. Pure functions,
// no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "convert/mlx_layout.h"

namespace recur::convert {

// One tensor of the Hugging Face checkpoint.
struct HfTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::kBF16;
};

// Where a planned tensor's values come from: inputs[e] whole for expert e of a stack (one input:
// the whole tensor, or with parts > 1 part `part` of `parts` equal slabs of each expert's rows of
// a fused tensor).
struct MlxSource {
  std::vector<std::size_t> inputs;
  std::int64_t parts = 1, part = 0;
};

struct MlxPlan {
  std::vector<MlxTensor> tensors;
  std::vector<MlxSource> sources;  // one per tensor
};

// The plan for `inputs` (in their order; a stack takes the place of its first expert):
// - "<p>experts.<e>.<proj>.weight" for e = 0 .. E-1 (proj gate_proj / up_proj / down_proj; lfm2_moe
//   w1 / w3 / w2) become "<p>switch_mlp.<proj>.weight" [E, rows, cols] (lfm2_moe's named
//   gate_proj / up_proj / down_proj; nemotron_h's up_proj / down_proj fc1 / fc2, as are its
//   transformers 5 stacks "<p>experts.up_proj" / "<p>experts.down_proj"), for the families whose
//   mlx-lm sanitize stacks them;
//   experts that are not all there with one shape and dtype stay as they are;
// - lfm2_moe's dense feed_forward.w1 / w3 / w2 are renamed gate_proj / up_proj / down_proj;
// - "<p>experts.gate_up_proj" [E, 2 * ff, d] (gate rows first in each expert) becomes
//   "<p>switch_mlp.gate_proj.weight" and "<p>switch_mlp.up_proj.weight" [E, ff, d],
//   "<p>experts.down_proj" "<p>switch_mlp.down_proj.weight" (qwen3_5_moe.py); Granite's
//   "<p>block_sparse_moe.input_linear.weight" / "output_linear.weight" alike
//   (granitemoehybrid.py); dense Granite's (no experts) "<p>shared_mlp.input_linear.weight"
//   [2 * ff, d] becomes "<p>mlp.gate_proj.weight" and "<p>mlp.up_proj.weight" [ff, d] and
//   "<p>shared_mlp.output_linear.weight" "<p>mlp.down_proj.weight";
// - everything else is mlx_tensor(rules, name, shape, dtype).
MlxPlan plan_mlx(const MlxRules& rules, std::span<const HfTensor> inputs);

// Reads `count` f32 values of input `input` from element `begin` (row-major) into out.
using InputReadFn =
    std::function<void(std::size_t input, std::int64_t begin, std::span<float> out)>;

// Elements [begin, begin + out.size()) of planned tensor t, read from its inputs.
void read_planned(const MlxPlan& plan, std::size_t t, std::int64_t begin, std::span<float> out,
                  const InputReadFn& read_input);

}  // namespace recur::convert
