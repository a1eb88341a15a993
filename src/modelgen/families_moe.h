// The qwen3_5_moe and qwen3_next presets and tensor tables (families_moe.cc), reached through
// families.h's preset_geometry and tensor_table. Internal to modelgen.
#pragma once

#include <vector>

#include "modelgen/families.h"

namespace recur::modelgen {

Geometry qwen3_5_moe_preset(bool real);
Geometry qwen3_next_preset(bool real);
// Both families: the prefix (model.language_model. or model.) and the GDN projections differ.
std::vector<GenTensor> qwen3_next_table(const Geometry& g, DType dtype);

}  // namespace recur::modelgen
