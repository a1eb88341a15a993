// Binding a family's tensors to a checkpoint (the loader's TensorVisitor): matrices as views into
// the mapping, MLX affine-quantized ones repacked into the kernels' layout, floating ones quantized
// on load (--quantize), stacked / fused / MXFP4 / transposed experts, small vectors as f32. Every
// error names the tensor. Internal to model/.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "model/checkpoint.h"
#include "model/family.h"
#include "model/model.h"
#include "util/check.h"
#include "util/page_arena.h"

namespace recur::model {

// Quantized weights in the kernels' packed layout (kernels/quant.h), repacked from an MLX
// checkpoint or quantized at load: owned here, read by the views the families hold.
struct QuantizedStore {
  PageArena arena;
  std::size_t bytes = 0;

  // A zeroed buffer for a packed matrix of `like`'s format, on cache lines (the kernels' 64-byte
  // loads would each touch two lines otherwise; packed sizes are multiples of 64), in the arena's
  // huge pages: experts' weights stream through the TLB at every prefill.
  kernels::WeightView add(kernels::WeightView like) {
    const auto n = static_cast<std::size_t>(like.total_bytes());
    void* p = arena.allocate(n);
    RECUR_CHECK_MSG(p != nullptr, "out of memory for a quantized weight");
    bytes += n;
    like.data = p;
    return like;
  }
};

// Visits `impl`'s tensors, binding each slot to `ck` (quantized copies into `store`) and listing
// them in `list`; the first error.
Status bind_tensors(FamilyModel& impl, const Checkpoint& ck,
                    const std::optional<QuantizationConfig>& quant, const LoadOptions& opts,
                    std::string_view family, QuantizedStore* store, std::vector<TensorEntry>* list);

}  // namespace recur::model
