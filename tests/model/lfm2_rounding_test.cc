// Where LFM2's bf16 logit error comes from (docs/model-lfm2.md "bf16 error"): the engine against
// the float64 reference with the short conv's intermediates rounded stage by stage, and how far
// transformers' bf16 rounding of those stages moves the reference itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "kernels/isa.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "reference.h"
#include "test_util.h"

namespace recur::model {
namespace {

using reference::Rounding;
using reference::ShortConvRounding;
using reference::Vec;
using testing::make_checkpoint;
using testing::TempDir;

constexpr int kTokens = 24;

double range_of(const std::vector<Vec>& rows) {
  double lo = 1e300, hi = -1e300;
  for (const Vec& r : rows) {
    for (double v : r) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  return hi - lo;
}

double max_diff(const std::vector<Vec>& a, const std::vector<Vec>& b) {
  double m = 0.0;
  for (std::size_t t = 0; t < a.size(); ++t) {
    for (std::size_t i = 0; i < a[t].size(); ++i) m = std::max(m, std::abs(a[t][i] - b[t][i]));
  }
  return m;
}

struct Case {
  std::string preset;
  std::string dir;
  std::vector<std::int32_t> tokens;
  std::vector<std::pair<kernels::Isa, std::vector<Vec>>> engine;  // per supported ISA
};

void load_case(const TempDir& tmp, const std::string& preset, Case* c) {
  c->preset = preset;
  c->dir =
      make_checkpoint(tmp, preset, modelgen::Family::kLfm2, modelgen::DType::kBF16, 5, 1, preset);
  auto m = Model::load(c->dir, {.max_batch_tokens = kTokens, .max_logit_rows = kTokens});
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  std::mt19937 rng(99);  // reference_test's tokens
  c->tokens.resize(kTokens);
  for (auto& t : c->tokens) t = static_cast<std::int32_t>(rng() % (*m)->vocab_size());
  for (auto isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx2Vnni,
                   kernels::Isa::kAvx512, kernels::Isa::kAmx}) {
    if (!kernels::isa_supported(isa)) continue;
    ASSERT_TRUE(kernels::select_isa(isa).is_ok());
    ThreadPool pool(2);
    auto seq = (*m)->new_sequence();
    SeqChunk chunk{.seq = seq.get(), .tokens = c->tokens, .logits = LogitsWanted::kAll};
    auto got = (*m)->forward(pool, {&chunk, 1});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    std::vector<Vec> rows;
    for (int t = 0; t < kTokens; ++t) {
      auto r = got->row(t);
      rows.emplace_back(r.begin(), r.end());
    }
    c->engine.emplace_back(isa, std::move(rows));
  }
  ASSERT_TRUE(kernels::select_isa(kernels::Isa::kAuto).is_ok());
}

std::vector<Vec> reference_with(const Case& c, const ShortConvRounding& r) {
  auto ck = Checkpoint::open(c.dir);
  RECUR_CHECK(ck.is_ok());
  reference::set_short_conv_rounding(r);
  auto out = reference::forward_lfm2(*ck, c.tokens);
  reference::set_short_conv_rounding({});
  return out;
}

// The engine holds the short conv's intermediates in f32 and rounds only C ⊙ conv, at out_proj's
// input, to bf16. A reference holding them in float64 disagrees where C ⊙ conv sits within an
// f32 step of a bf16 rounding boundary: the two round to neighbouring bf16 values. Measured
// (docs/model-lfm2.md "bf16 error"): tiny-bias's 1.1e-4 of the range on every ISA is in_proj's
// output held in f32 (with the reference rounding it to float, AVX2 and AVX-512 are at 4e-8);
// tiny's 2e-3 on the scalar table is not in the short conv (it stays with every stage held in f32).
// With the short conv held in f32, the vector ISAs are within 1e-4 (tiny-bias: 1.1e-4 without).
TEST(Lfm2Rounding, VectorIsasMatchAReferenceHoldingTheShortConvInF32) {
  TempDir tmp("lfm2_rounding");
  for (const std::string preset : {"tiny", "tiny-bias"}) {
    SCOPED_TRACE(preset);
    Case c;
    ASSERT_NO_FATAL_FAILURE(load_case(tmp, preset, &c));
    const std::vector<Vec> f64 = reference_with(c, {});
    const double range = range_of(f64);
    const struct {
      const char* name;
      ShortConvRounding r;
    } stages[] = {
        {"f64 (reference_test)", {}},
        {"in_proj f32", {.in_proj = Rounding::kF32}},
        {"B*x f32", {.bx = Rounding::kF32}},
        {"conv f32", {.conv = Rounding::kF32}},
        {"all f32 (the engine's)",
         {.in_proj = Rounding::kF32,
          .bx = Rounding::kF32,
          .conv = Rounding::kF32,
          .gated = Rounding::kF32}},
    };
    for (const auto& s : stages) {
      const std::vector<Vec> want = s.r.in_proj == Rounding::kF64 && s.r.bx == Rounding::kF64 &&
                                            s.r.conv == Rounding::kF64 &&
                                            s.r.gated == Rounding::kF64
                                        ? f64
                                        : reference_with(c, s.r);
      for (const auto& [isa, rows] : c.engine) {
        const double err = max_diff(rows, want) / range;
        std::printf("[ lfm2 bf16 ] %s, reference %s, %s: engine error %.3g of the range\n",
                    preset.c_str(), s.name, kernels::isa_name(isa), err);
        // C ⊙ conv's own f32 rounding alone changes nothing: matmul rounds through float anyway.
        if (s.r.gated == Rounding::kF32 && isa != kernels::Isa::kScalar) {
          EXPECT_LE(err, 1e-4) << s.name << " " << kernels::isa_name(isa);
        }
      }
    }
    // transformers in bf16 rounds every one of these stages to bf16: how far that alone moves
    // the logits from the float64 forward, stage by stage.
    const struct {
      const char* name;
      ShortConvRounding r;
    } hf[] = {
        {"in_proj", {.in_proj = Rounding::kBf16}},
        {"B*x", {.bx = Rounding::kBf16}},
        {"conv", {.conv = Rounding::kBf16}},
        {"all four",
         {.in_proj = Rounding::kBf16,
          .bx = Rounding::kBf16,
          .conv = Rounding::kBf16,
          .gated = Rounding::kBf16}},
    };
    for (const auto& s : hf) {
      const double moved = max_diff(reference_with(c, s.r), f64) / range;
      std::printf(
          "[ lfm2 bf16 ] %s, transformers' bf16 rounding of %s: moves the logits %.3g of "
          "the range\n",
          preset.c_str(), s.name, moved);
    }
  }
}

}  // namespace
}  // namespace recur::model
