// The load's progress (LoadOptions::progress): its total is the checkpoint's weight bytes and every
// tensor the model reads is counted once, whether mapped in place, quantized on load or repacked
// from an MLX checkpoint, so the last report says 100% of the total.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/model.h"
#include "modelgen/generator.h"
#include "test_util.h"
#include "util/progress.h"

namespace recur::model {
namespace {

using testing::TempDir;

struct Case {
  const char* name;
  int checkpoint_bits;  // the generator's --bits: an MLX checkpoint
  int quantize_bits;    // --quantize on load
};

TEST(LoadProgress, EveryWeightByteIsCountedOnceWhateverTheLoadDoes) {
  for (const Case& c :
       {Case{"mapped", 0, 0}, Case{"quantized_on_load", 0, 4}, Case{"mlx_repacked", 4, 0}}) {
    SCOPED_TRACE(c.name);
    TempDir tmp(std::string("progress_") + c.name);
    modelgen::GenSpec spec;
    spec.family = modelgen::Family::kQwen3_5;
    spec.dtype = modelgen::DType::kBF16;
    spec.bits = c.checkpoint_bits;
    spec.group_size = 32;
    const std::string dir = tmp.file("ckpt");
    ASSERT_TRUE(modelgen::write_checkpoint(spec, dir).is_ok());

    ManualClock clock;
    std::vector<std::string> lines;
    // Nothing held back: every report is a line, so the last one is the load's end state.
    Progress progress("loading", 0, ProgressUnit::kBytes,
                      {.tty = false,
                       .log_interval_ns = 0,
                       .quiet_ns = 0,
                       .clock = &clock,
                       .out = [&](std::string_view s) { lines.emplace_back(s); }});
    auto m = Model::load(dir, {.max_batch_tokens = 8,
                               .max_logit_rows = 1,
                               .quantize_bits = c.quantize_bits,
                               .quantize_group_size = 32,
                               .progress = &progress});
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    ASSERT_GE(lines.size(), 2u);
    const std::string total =
        Progress::quantity(static_cast<std::int64_t>((*m)->weight_bytes()), ProgressUnit::kBytes);
    EXPECT_EQ(lines.back().rfind("loading: 100% " + total + " of " + total, 0), 0u) << lines.back();
  }
}

}  // namespace
}  // namespace recur::model
