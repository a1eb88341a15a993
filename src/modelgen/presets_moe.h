// The qwen3_5_moe and qwen3_next presets (presets_moe.cc), reached through families.h's
// resolve_geometry. Internal to modelgen.
#pragma once

#include <vector>

#include "modelgen/families.h"

namespace recur::modelgen {

Geometry qwen3_5_moe_preset(bool real);
Geometry qwen3_next_preset(bool real);
// Both families: the prefix (model.language_model. or model.) and the GDN projections differ.

}  // namespace recur::modelgen
