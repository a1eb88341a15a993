// Engine logits on f32 checkpoints against the float64 reference (reference_*.cc), every family
// and every ISA: within a small fraction of the logit range, and the same argmax everywhere (but
// at near-ties when quantized).
// (Precision note at the top of model-families.md: an f32 implementation matches to ~1e-5 of the
// range; a wrong layout, a mixed-up norm or a head-mapping slip shows up as percents.)
#include "reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/isa.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "model/moe.h"
#include "test_util.h"

namespace recur::model {
namespace {

using testing::make_checkpoint;
using testing::TempDir;

constexpr int kTokens = 24;
constexpr double kMaxRelError = 1e-4;      // of the reference logit range
constexpr double kMaxRelErrorBf16 = 1e-3;  // margin for a rare bf16 rounding flip (measured ~6e-8)
// LFM2's bf16 error (lfm2_rounding_test.cc, docs/model-lfm2.md "bf16 error"): 1.1e-4 of the range
// on tiny-bias, every ISA - in_proj's output held in f32 where the reference holds f64 flips one C
// ⊙ conv value at out_proj's bf16 input - and 2e-3 on tiny with the scalar table only, a flip
// outside the short conv that also swaps a near-tie. transformers' own bf16 rounding of the short
// conv's stages moves these logits 4.5e-3..7.4e-3. f32 checkpoints check the math to 9e-7.
constexpr double kMaxRelErrorBf16Gated = 5e-3;
// Qwen3.5-MoE and Qwen3-Next's bf16 error is one bf16 rounding flip (an input within ~1e-7 of a
// bf16 rounding boundary, which the engine's f32 and the reference's f64 round to neighbouring
// values) carried on by the recurrent state and attention: on scalar and AVX-512 every position
// before 16 matches to 6e-8 of the range, position 16 and every later one differ by 5e-4..1.7e-3
// (qwen3_5_moe 1.2e-3 at most); AVX2's sums flip another input at position 12 alone (4.9e-5).
// The routing is the same in all (no expert choice differs; see near_tie_margin). f32 checkpoints
// check the math to 1.5e-6.
constexpr double kMaxRelErrorBf16Moe = 3e-3;
// Without an int8 rounding flip the quantized engine is within ~2e-7 of the range; an input that
// f32 and f64 round to neighbouring int8 codes (about one per forward here) moves these
// random-weight logits by up to ~1e-2 of the range (measured 5e-3..1e-2 over token seeds). Wrong
// scales, groups or layouts show up as tens of percents.
constexpr double kMaxRelErrorQuant = 2.5e-2;

std::vector<reference::Vec> reference_logits(modelgen::Family f, const Checkpoint& ck,
                                             const std::vector<std::int32_t>& tokens) {
  switch (f) {
    case modelgen::Family::kQwen3:
      return reference::forward_qwen3(ck, tokens);
    case modelgen::Family::kQwen3_5:
      return reference::forward_qwen3_5(ck, tokens);
    case modelgen::Family::kMamba2:
      return reference::forward_mamba2(ck, tokens);
    case modelgen::Family::kGemma3:
      return reference::forward_gemma3(ck, tokens);
    case modelgen::Family::kLlama:
      return reference::forward_llama(ck, tokens);
    case modelgen::Family::kQwen3Moe:
      return reference::forward_qwen3_moe(ck, tokens);
    case modelgen::Family::kGraniteHybrid:
    case modelgen::Family::kGraniteMoe:
      return reference::forward_granite_hybrid(ck, tokens);
    case modelgen::Family::kLfm2:
    case modelgen::Family::kLfm2Moe:
      return reference::forward_lfm2(ck, tokens);
    case modelgen::Family::kNemotronH:
      return reference::forward_nemotron_h(ck, tokens);
    case modelgen::Family::kFalconH1:
      return reference::forward_falcon_h1(ck, tokens);
    case modelgen::Family::kQwen3_5Moe:
    case modelgen::Family::kQwen3Next:
      return reference::forward_qwen3_next(ck, tokens);
    case modelgen::Family::kGptOss:
      return reference::forward_gpt_oss(ck, tokens);
    case modelgen::Family::kSmolLm3:
      return reference::forward_smollm3(ck, tokens);
  }
  return {};
}

// Router near-ties (reference.h set_engine_routes): the families whose reference follows the
// engine's expert choice where its own k-th and (k+1)-th probabilities are within a margin of
// ln p_k - ln p_{k+1}. The margin is what the engine's rounding can move that gap by: f32 sums
// (f32 checkpoints), and a bf16 or int8 rounding flip of a matmul input (bf16 and quantized ones).
// Outside it the reference keeps its own choice, so a routing bug still fails.
bool follows_engine_routes(modelgen::Family f, std::string_view preset = "tiny") {
  return f == modelgen::Family::kQwen3_5Moe || f == modelgen::Family::kQwen3Next ||
         f == modelgen::Family::kGraniteMoe || f == modelgen::Family::kLfm2Moe ||
         f == modelgen::Family::kGptOss ||
         (f == modelgen::Family::kNemotronH && preset == "tiny-moe");
}
// gpt-oss's experts are MXFP4 in every checkpoint: their inputs are rounded to int8 as quantized
// weights' are, whatever the dtype of the rest.
bool quantized_experts(modelgen::Family f) { return f == modelgen::Family::kGptOss; }
double near_tie_margin(modelgen::Family f, modelgen::DType dtype, int quantize_bits) {
  if (quantize_bits != 0 || quantized_experts(f)) return 5e-2;
  return dtype == modelgen::DType::kF32 ? 1e-4 : 1e-2;
}

class Reference : public ::testing::TestWithParam<modelgen::Family> {};

void check_against_reference(modelgen::Family family, modelgen::DType dtype, double tolerance,
                             int quantize_bits = 0, const std::string& preset = "tiny") {
  constexpr int kGroup = 32;
  TempDir tmp(std::string("ref_") + modelgen::family_name(family) + modelgen::dtype_name(dtype) +
              std::to_string(quantize_bits) + preset);
  std::string dir = make_checkpoint(tmp, "m", family, dtype, 5, 1, preset);
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  auto m = Model::load(dir, {.max_batch_tokens = kTokens,
                             .max_logit_rows = kTokens,
                             .quantize_bits = quantize_bits,
                             .quantize_group_size = kGroup});
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  std::mt19937 rng(99);
  std::vector<std::int32_t> tokens(kTokens);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng() % (*m)->vocab_size());
  const bool routes = follows_engine_routes(family, preset);
  std::vector<reference::Vec> want;
  double range = 0.0;
  reference::RoutingStats routing;
  // The reference's logits, following `engine_routes` at near-ties when given.
  auto compute_reference = [&](const std::vector<std::int32_t>* engine_routes) {
    reference::set_quantization(quantize_bits, kGroup, (*m)->family());
    reference::set_engine_routes(engine_routes, near_tie_margin(family, dtype, quantize_bits));
    want = reference_logits(family, *ck, tokens);
    routing = reference::routing_stats();
    reference::set_engine_routes(nullptr, 0.0);
    reference::set_quantization(0, 0);
    double lo = 1e300, hi = -1e300;
    for (const auto& row : want) {
      for (double v : row) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    range = hi - lo;
  };
  if (!routes) compute_reference(nullptr);
  for (auto isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx2Vnni,
                   kernels::Isa::kAvx512, kernels::Isa::kAmx}) {
    if (!kernels::isa_supported(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    ASSERT_TRUE(kernels::select_isa(isa).is_ok());
    ThreadPool pool(2);
    auto seq = (*m)->new_sequence();
    SeqChunk c{.seq = seq.get(), .tokens = tokens, .logits = LogitsWanted::kAll};
    std::vector<std::int32_t> engine_routes;
    if (routes) set_route_log(&engine_routes);
    auto got = (*m)->forward(pool, {&c, 1});
    set_route_log(nullptr);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    if (routes) {
      compute_reference(&engine_routes);
      const reference::RoutingStats& s = routing;
      std::printf(
          "[ reference ] %s %s q%d %s: %lld routing decisions, smallest gap %.3g, %lld "
          "near-ties within %.3g took the engine's experts\n",
          modelgen::family_name(family), modelgen::dtype_name(dtype), quantize_bits,
          kernels::isa_name(isa), static_cast<long long>(s.decisions), s.min_gap,
          static_cast<long long>(s.near_ties_taken), near_tie_margin(family, dtype, quantize_bits));
    }
    ASSERT_EQ(want.size(), tokens.size());
    ASSERT_GT(range, 0.1) << "degenerate logits";
    double max_err = 0.0;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      auto row = got->row(static_cast<std::int64_t>(t));
      ASSERT_EQ(row.size(), want[t].size());
      for (std::size_t i = 0; i < row.size(); ++i) {
        max_err = std::max(max_err, std::abs(static_cast<double>(row[i]) - want[t][i]));
      }
      auto want_arg = std::max_element(want[t].begin(), want[t].end()) - want[t].begin();
      auto got_arg = std::max_element(row.begin(), row.end()) - row.begin();
      // Quantized, logits within tolerance x range of the reference may swap two candidates
      // whose reference values are within twice that (the q4 qwen3_moe run swapped one near-tie,
      // at a max error of 0.017 of the range), and so may LFM2's and the MoE hybrids' bf16
      // rounding flips (kMaxRelErrorBf16Gated, kMaxRelErrorBf16Moe); otherwise any argmax change
      // is a bug.
      if (want_arg != got_arg &&
          (quantize_bits != 0 || quantized_experts(family) || tolerance > kMaxRelErrorBf16)) {
        EXPECT_LE(want[t][static_cast<std::size_t>(want_arg)] -
                      want[t][static_cast<std::size_t>(got_arg)],
                  2 * tolerance * range)
            << "argmax differs at position " << t;
      } else {
        EXPECT_EQ(want_arg, got_arg) << "argmax differs at position " << t;
      }
    }
    EXPECT_LE(max_err / range, tolerance)
        << "max |engine - reference| = " << max_err << " over a logit range of " << range;
    std::printf("[ reference ] %s %s q%d %s: max error %.3g of the logit range %.3g\n",
                modelgen::family_name(family), modelgen::dtype_name(dtype), quantize_bits,
                kernels::isa_name(isa), max_err / range, range);
  }
  ASSERT_TRUE(kernels::select_isa(kernels::Isa::kAuto).is_ok());
}

TEST_P(Reference, EngineMatchesFloat64ReferenceOnF32Checkpoint) {
  check_against_reference(GetParam(), modelgen::DType::kF32,
                          quantized_experts(GetParam()) ? kMaxRelErrorQuant : kMaxRelError);
}

// bf16 weights: the reference rounds matmul inputs and K/V to bf16 where the engine does, so
// only f32-vs-f64 accumulation differences (and the rare bf16 rounding flip they cause) remain.
TEST_P(Reference, EngineMatchesBf16RoundingReferenceOnBf16Checkpoint) {
  const bool gated = GetParam() == modelgen::Family::kLfm2;
  check_against_reference(GetParam(), modelgen::DType::kBF16,
                          quantized_experts(GetParam())       ? kMaxRelErrorQuant
                          : gated                             ? kMaxRelErrorBf16Gated
                          : follows_engine_routes(GetParam()) ? kMaxRelErrorBf16Moe
                                                              : kMaxRelErrorBf16);
}

// Quantized on load (--quantize, groups of 32): the reference uses the dequantized weights and
// rounds each matmul's input to int8 per group as the engine does, so what remains is f32-vs-f64
// accumulation and the int8 rounding flips it causes (kMaxRelErrorQuant).
TEST_P(Reference, EngineMatchesReferenceQuantizedOnLoad) {
  for (int bits : {4, 8}) {
    SCOPED_TRACE(bits);
    check_against_reference(GetParam(), modelgen::DType::kBF16, kMaxRelErrorQuant, bits);
    check_against_reference(GetParam(), modelgen::DType::kF32, kMaxRelErrorQuant, bits);
  }
}

// Gemma 3 past its window: 150 tokens through the tiny preset's 16-token window in chunks of
// 1, 70 (more than one ring piece), 5, 40 and 34 rows, so the ring (79 slots) wraps and windows
// span its seam; every position's logits against the reference's explicit sliding-window mask.
// f32 (measured 4.2e-7 of the range): over 150 bf16 positions the rare bf16 rounding flips of the
// 24-token test add up (measured 1.3e-3 at one position), which would hide nothing a wrong window
// or slot shows (tens of percents) but makes the bound loose.
TEST(ReferenceGemma3, RingMatchesSlidingWindowMaskPastTheWindow) {
  TempDir tmp("ref_gemma_ring");
  const std::string dir =
      make_checkpoint(tmp, "m", modelgen::Family::kGemma3, modelgen::DType::kF32, 8);
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  auto m = Model::load(dir, {.max_batch_tokens = 70, .max_logit_rows = 70});
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  std::mt19937 rng(7);
  std::vector<std::int32_t> tokens(150);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng() % (*m)->vocab_size());
  const auto want = reference::forward_gemma3(*ck, tokens);
  double lo = 1e300, hi = -1e300;
  for (const auto& row : want) {
    for (double v : row) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  ThreadPool pool(2);
  auto seq = (*m)->new_sequence();
  double max_err = 0.0;
  std::size_t at = 0;
  for (std::size_t n : {1, 70, 5, 40, 34}) {
    SeqChunk c{
        .seq = seq.get(), .tokens = std::span(tokens).subspan(at, n), .logits = LogitsWanted::kAll};
    auto got = (*m)->forward(pool, {&c, 1});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    for (std::size_t r = 0; r < n; ++r) {
      const auto row = got->row(static_cast<std::int64_t>(r));
      for (std::size_t i = 0; i < row.size(); ++i) {
        max_err = std::max(max_err, std::abs(static_cast<double>(row[i]) - want[at + r][i]));
      }
    }
    at += n;
  }
  EXPECT_LE(max_err / (hi - lo), kMaxRelError) << "max error " << max_err;
  std::printf("[ reference ] gemma3 f32, 150 tokens: max error %.3g of the logit range %.3g\n",
              max_err / (hi - lo), hi - lo);
}

// Llama's other side of every flag (tiny-bias: q/k/v/o and MLP biases, tied head, no head_dim
// key, no RoPE scaling); the tiny preset covers llama3 scaling and an untied head.
TEST(ReferenceLlama, BiasesTiedHeadAndPlainRope) {
  check_against_reference(modelgen::Family::kLlama, modelgen::DType::kF32, kMaxRelError, 0,
                          "tiny-bias");
  check_against_reference(modelgen::Family::kLlama, modelgen::DType::kBF16, kMaxRelErrorBf16, 0,
                          "tiny-bias");
}

// SmolLM3's other side of every flag (tiny-list: an explicit no_rope_layers [0, 1, 0, 1] that is
// not the interval pattern, a sliding window of 8 on its NoPE layers, q/k/v/o and MLP biases, a
// tied head, a head_dim key); tiny covers the interval's NoPE layer 3 and an untied head. Both
// over kTokens = 24 positions, so NoPE layers run at positions > 0 and the window is crossed.
// bf16 on tiny-list is one bf16 rounding flip of a matmul input (the engine's f32 sums, whose order
// differs per ISA, and the reference's f64 round it to neighbouring bf16 values): 8.3e-4 of the
// range with the scalar and AVX2 kernels, 4e-8 with AVX-512, while f32 checks the math to 3.6e-7
// on every ISA; hence the flip's margin rather than kMaxRelErrorBf16.
TEST(ReferenceSmolLm3, ExplicitNoRopeListWindowBiasesTiedHead) {
  check_against_reference(modelgen::Family::kSmolLm3, modelgen::DType::kF32, kMaxRelError, 0,
                          "tiny-list");
  check_against_reference(modelgen::Family::kSmolLm3, modelgen::DType::kBF16, kMaxRelErrorBf16Gated,
                          0, "tiny-list");
}

// LFM2's other side of every flag (tiny-bias: conv biases on in_proj, the conv and out_proj, an
// untied head, LFM2's config spelling: full_attn_idxs, rope_theta); tiny covers LFM2.5's.
TEST(ReferenceLfm2, ConvBiasesUntiedHeadAndLfm2Keys) {
  check_against_reference(modelgen::Family::kLfm2, modelgen::DType::kF32, kMaxRelError, 0,
                          "tiny-bias");
  check_against_reference(modelgen::Family::kLfm2, modelgen::DType::kBF16, kMaxRelErrorBf16Gated, 0,
                          "tiny-bias");
}

// Falcon-H1's other side (tiny-norm: the mixer's gated norm, normalised before the gate over two
// SSM groups, each with its slice of the weight; a tied head); tiny has the real 0.5B's no-norm
// mixer.
TEST(ReferenceFalconH1, GatedNormOverGroupsAndTiedHead) {
  check_against_reference(modelgen::Family::kFalconH1, modelgen::DType::kF32, kMaxRelError, 0,
                          "tiny-norm");
  check_against_reference(modelgen::Family::kFalconH1, modelgen::DType::kBF16, kMaxRelErrorBf16, 0,
                          "tiny-norm");
}

// Granite 4.0-H with two SSM groups (tiny-groups): transformers' gated norm takes the whole row,
// not each group (per group it is 2.6e-2..6.5e-2 of the logit range away).
TEST(ReferenceGranite, GatedNormOverTheWholeRowWithGroups) {
  check_against_reference(modelgen::Family::kGraniteHybrid, modelgen::DType::kF32, kMaxRelError, 0,
                          "tiny-groups");
  check_against_reference(modelgen::Family::kGraniteHybrid, modelgen::DType::kBF16,
                          kMaxRelErrorBf16, 0, "tiny-groups");
}

// Granite 4.0-H with mamba_proj_bias (tiny-bias): the Mamba2 in_proj and out_proj biases, which
// transformers loads (recur refused the config before).
TEST(ReferenceGranite, MambaProjectionBiases) {
  check_against_reference(modelgen::Family::kGraniteHybrid, modelgen::DType::kF32, kMaxRelError, 0,
                          "tiny-bias");
  check_against_reference(modelgen::Family::kGraniteHybrid, modelgen::DType::kBF16,
                          kMaxRelErrorBf16, 0, "tiny-bias");
}

// Nemotron-H's MoE blocks (tiny-moe: M E M * E -, 8 ReLU² experts in 2 groups of which the
// router keeps 1, 3 per token, the shared expert, e_score_correction_bias), following the engine's
// routes at near-ties: f32 (measured <= 3.8e-7 of the range), bf16 and quantized on load (the
// router stays floating, as mlx-lm leaves it). bf16: scalar and AVX-512 match to 7.1e-8; AVX2's
// sums flip one bf16 rounding at position 18, which the Mamba2 state and attention carry on
// (1.06e-3 there, 2.2e-4 and 9e-4 at later positions, no expert choice differing), as
// kMaxRelErrorBf16Moe describes for the other MoE hybrids.
TEST(ReferenceNemotronH, MixtureOfExpertsBlocks) {
  const auto f = modelgen::Family::kNemotronH;
  check_against_reference(f, modelgen::DType::kF32, kMaxRelError, 0, "tiny-moe");
  check_against_reference(f, modelgen::DType::kBF16, kMaxRelErrorBf16Moe, 0, "tiny-moe");
  for (int bits : {4, 8}) {
    SCOPED_TRACE(bits);
    check_against_reference(f, modelgen::DType::kBF16, kMaxRelErrorQuant, bits, "tiny-moe");
    check_against_reference(f, modelgen::DType::kF32, kMaxRelErrorQuant, bits, "tiny-moe");
  }
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, Reference, ::testing::ValuesIn(testing::kAllFamilies),
                         [](const auto& p) { return modelgen::family_name(p.param); });

}  // namespace
}  // namespace recur::model
