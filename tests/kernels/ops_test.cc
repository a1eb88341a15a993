// Norms, RoPE, activations, softmax, embedding gather and conv1d on every runnable ISA against the
// scalar reference, on widths 0..2x16+3 with strided (misaligned) rows.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernels.h"
#include "kernels/reference.h"
#include "quant_util.h"
#include "test_util.h"
#include "util/thread_pool.h"

namespace recur::kernels {
namespace {

using testing::random_floats;
using testing::runnable_isas;
using testing::ScopedIsa;

constexpr std::int64_t kMaxWidth = 2 * 16 + 3;

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float rel,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (1.0f + std::fabs(want[i]))) << what << " at " << i;
}

TEST(Ops, RmsNormVariantsMatchReference) {
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (std::int64_t width = 1; width <= kMaxWidth; ++width) {
      const RowsShape shape{
          .n_rows = 3, .width = width, .x_stride = width + 1, .y_stride = width + 2};
      auto x = random_floats(static_cast<std::size_t>(3 * (width + 1) + 1), 1, -3, 3);
      auto z = random_floats(x.size(), 2, -3, 3);
      auto w = random_floats(static_cast<std::size_t>(width), 3);
      const std::size_t ny = static_cast<std::size_t>(3 * (width + 2));
      std::vector<float> got(ny), want(ny);
      rms_norm(x.data() + 1, w.data(), got.data(), shape, 1e-6f);
      ref::rms_norm(x.data() + 1, w.data(), want.data(), shape, 1e-6f);
      expect_near_all(got, want, 2e-6f, std::string("rms_norm ") + isa_name(isa));
      rms_norm_gated(x.data() + 1, z.data() + 1, w.data(), got.data(), shape, 1e-6f);
      ref::rms_norm_gated(x.data() + 1, z.data() + 1, w.data(), want.data(), shape, 1e-6f);
      expect_near_all(got, want, 2e-6f, "rms_norm_gated");
      for (std::int64_t groups : {1, 2}) {
        if (width % groups != 0) continue;
        rms_norm_gate_first(x.data() + 1, z.data() + 1, w.data(), got.data(), shape, width / groups,
                            1e-5f);
        ref::rms_norm_gate_first(x.data() + 1, z.data() + 1, w.data(), want.data(), shape,
                                 width / groups, 1e-5f);
        expect_near_all(got, want, 2e-6f, "rms_norm_gate_first");
      }
      auto a = x, b = x;
      l2_norm(a.data() + 1, {.n_rows = 3, .width = width, .x_stride = width + 1}, 1e-6f, 0.5f);
      ref::l2_norm(b.data() + 1, {.n_rows = 3, .width = width, .x_stride = width + 1}, 1e-6f, 0.5f);
      expect_near_all(a, b, 2e-6f, "l2_norm");
    }
  }
}

TEST(Ops, RmsNormFormulas) {
  // x = [3, 4]: mean(x²) = 12.5
  const float x[2] = {3, 4}, w[2] = {2, -1};
  float y[2];
  const float inv = 1.0f / std::sqrt(12.5f + 1e-6f);
  ref::rms_norm(x, w, y, {.n_rows = 1, .width = 2}, 1e-6f);
  EXPECT_FLOAT_EQ(y[0], 3 * inv * 2);
  EXPECT_FLOAT_EQ(y[1], 4 * inv * -1);
}

TEST(Ops, RopeMatchesReferenceAndFormula) {
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (std::int64_t rot : {2, 4, 8, 16}) {
      const RopeShape shape{.n_tokens = 5,
                            .n_heads = 3,
                            .head_dim = 20,
                            .rotary_dim = rot,
                            .head_stride = 40,
                            .token_stride = 130};
      auto x = random_floats(5 * 130, 4);
      const std::int32_t pos[5] = {0, 1, 7, 1000, 262143};
      auto a = x, b = x;
      rope(a.data(), pos, shape, 1e7f);
      ref::rope(b.data(), pos, shape, 1e7f);
      expect_near_all(a, b, 1e-6f, std::string("rope ") + isa_name(isa));
      // Features past rotary_dim and between heads are untouched.
      for (std::int64_t t = 0; t < 5; ++t)
        for (std::int64_t h = 0; h < 3; ++h)
          for (std::int64_t d = rot; d < 40; ++d) {
            const std::size_t i = static_cast<std::size_t>(t * 130 + h * 40 + d);
            ASSERT_EQ(a[i], x[i]);
          }
    }
  }
  // Position 1, rotary_dim 2: angle = 1 rad on the pair (0, 1).
  float v[2] = {1, 0};
  const std::int32_t p1 = 1;
  ref::rope(v, &p1, {.n_tokens = 1, .n_heads = 1, .head_dim = 2, .rotary_dim = 2}, 10000.0f);
  EXPECT_FLOAT_EQ(v[0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(v[1], std::sin(1.0f));
}

TEST(Ops, ActivationsMatchReference) {
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (std::int64_t n = 0; n <= kMaxWidth; ++n) {
      auto x = random_floats(static_cast<std::size_t>(n + 1), 9, -30, 30);
      auto g = random_floats(static_cast<std::size_t>(n + 1), 10, -30, 30);
      const auto sn = static_cast<std::size_t>(n);
      using Fn = void (*)(float*, std::int64_t);
      const std::pair<Fn, Fn> unary[] = {{silu, ref::silu},
                                         {sigmoid, ref::sigmoid},
                                         {softplus, ref::softplus},
                                         {softmax, ref::softmax}};
      for (auto [fast, slow] : unary) {
        auto a = x, b = x;
        fast(a.data() + 1, n);
        slow(b.data() + 1, n);
        expect_near_all(a, b, 2e-6f, std::string("unary ") + isa_name(isa));
      }
      std::vector<float> a(sn), b(sn);
      swiglu(g.data() + 1, x.data() + 1, a.data(), n);
      ref::swiglu(g.data() + 1, x.data() + 1, b.data(), n);
      expect_near_all(a, b, 2e-6f, "swiglu");
      geglu(g.data() + 1, x.data() + 1, a.data(), n);
      ref::geglu(g.data() + 1, x.data() + 1, b.data(), n);
      expect_near_all(a, b, 2e-6f, "geglu");
      auto c = x, d = x;
      mul_sigmoid(c.data() + 1, g.data() + 1, n);
      ref::mul_sigmoid(d.data() + 1, g.data() + 1, n);
      expect_near_all(c, d, 2e-6f, "mul_sigmoid");
      c = x, d = x;
      add(c.data() + 1, g.data() + 1, n);
      ref::add(d.data() + 1, g.data() + 1, n);
      ASSERT_TRUE(testing::same_bytes(c.data(), d.data(), c.size()));
      c = x, d = x;
      add_scaled(c.data() + 1, g.data() + 1, -0.37f, n);
      ref::add_scaled(d.data() + 1, g.data() + 1, -0.37f, n);
      ASSERT_TRUE(testing::same_bytes(c.data(), d.data(), c.size())) << "add_scaled";
      for (std::int64_t i = 0; i < n; ++i) {  // a product and a sum, each rounded: no fma
        const auto u = static_cast<std::size_t>(i + 1);
        ASSERT_EQ(c[u], x[u] + (-0.37f * g[u])) << "add_scaled at " << i;
      }
    }
  }
  EXPECT_EQ(ref::softplus(25.0f), 25.0f);  // torch threshold 20
  EXPECT_FLOAT_EQ(ref::softplus(0.0f), std::log(2.0f));
}

// AVX2 and AVX-512 build the same loops (vec_ops.h): the same bytes, on values across the
// whole exp range, including the clamped ends.
TEST(Ops, VectorIsasAgreeBitForBit) {
  if (testing::vector_isas().size() < 2) GTEST_SKIP() << testing::kNeedsTwoVectorIsas;
  auto x = random_floats(1000, 21, -100, 100);
  auto g = random_floats(1000, 22, -100, 100);
  std::vector<std::vector<float>> outs;
  for (Isa isa : testing::vector_isas()) {
    ScopedIsa scoped(isa);
    std::vector<float> out = x, tmp(x.size());
    silu(out.data(), 1000);
    swiglu(g.data(), x.data(), tmp.data(), 1000);
    out.insert(out.end(), tmp.begin(), tmp.end());
    geglu(g.data(), x.data(), tmp.data(), 1000);
    out.insert(out.end(), tmp.begin(), tmp.end());
    tmp = x;
    mul_sigmoid(tmp.data(), g.data(), 1000);
    out.insert(out.end(), tmp.begin(), tmp.end());
    tmp.assign(1000, 0.0f);
    rms_norm(x.data(), g.data(), tmp.data(), {.n_rows = 10, .width = 100}, 1e-6f);
    out.insert(out.end(), tmp.begin(), tmp.end());
    rms_norm_gate_first(x.data(), g.data(), x.data(), tmp.data(), {.n_rows = 10, .width = 100}, 50,
                        1e-5f);
    out.insert(out.end(), tmp.begin(), tmp.end());
    rms_norm_gated(x.data(), g.data(), x.data(), tmp.data(), {.n_rows = 10, .width = 100}, 1e-6f);
    out.insert(out.end(), tmp.begin(), tmp.end());
    tmp = x;
    l2_norm(tmp.data(), {.n_rows = 8, .width = 125}, 1e-6f, 0.3f);
    out.insert(out.end(), tmp.begin(), tmp.end());
    tmp = x;
    add_scaled(tmp.data(), g.data(), 0.7f, 1000);
    out.insert(out.end(), tmp.begin(), tmp.end());
    outs.push_back(out);
  }
  for (const auto& o : outs) ASSERT_TRUE(testing::same_bytes(o.data(), outs[0].data(), o.size()));
}

// torch's gelu(approximate="tanh") in float64, times u, as g·σ(2z) (= 0.5·g·(1 + tanh z)):
// 1 + tanh z itself would cancel to 0 in float64 too, below z = -19.
double geglu_f64(double g, double u) {
  const double z = std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g);
  return g / (1.0 + std::exp(-2.0 * z)) * u;
}

// Every ISA's geglu against the exact function over the whole range a gate takes (dense near 0,
// where the MLP's values live, out to where it saturates and underflows). The vector form is held
// to its stated bound (kernels.h): 2.5e-7·(1 + 2|z|) relative plus 1e-30 absolute, the rounding
// of z amplified by exp (measured worst: 1.6e-7·(1 + 2|z|), and 1.3e-6 for |g| <= 4). The scalar
// reference is torch's f32 tanh form, whose 1 + tanh z cancels at negative g: it is held to
// 2e-6·|g| absolute instead (measured: up to 5% relative at g = -5, 7e-8 absolute).
TEST(Ops, GegluWithinStatedToleranceOfFloat64) {
  std::vector<float> g, u;
  for (float v = -20.0f; v <= 20.0f; v += 1.0f / 512) g.push_back(v);
  for (float v : {-1e30f, -1e4f, -88.0f, -9.5f, -1e-20f, 0.0f, 1e-20f, 9.5f, 1e4f, 1e30f})
    g.push_back(v);
  for (std::size_t i = 0; i < g.size(); ++i) u.push_back(i % 3 == 0 ? 1.0f : -0.75f);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    std::vector<float> out(g.size());
    geglu(g.data(), u.data(), out.data(), static_cast<std::int64_t>(g.size()));
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double gi = g[i];
      const double z = std::sqrt(2.0 / M_PI) * (gi + 0.044715 * gi * gi * gi);
      const double want = geglu_f64(g[i], u[i]), err = std::fabs(out[i] - want);
      const double bound = isa == Isa::kScalar
                               ? 2e-6 * std::fabs(gi) + 1e-30
                               : 2.5e-7 * (1.0 + 2.0 * std::fabs(z)) * std::fabs(want) + 1e-30;
      ASSERT_LE(err, bound) << isa_name(isa) << " g " << g[i];
    }
  }
}

// A row's bytes do not depend on how the rows around it are split or batched: geglu over the
// whole buffer and over uneven pieces of it (tails of every length) agree bit for bit, and
// gating in place (out = gate, as the MLP does) gives the same bytes as into another buffer.
TEST(Ops, GegluIsSplitInvariantAndInPlace) {
  const auto g = random_floats(1000, 31, -8, 8), u = random_floats(1000, 32, -2, 2);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    std::vector<float> whole(g.size());
    geglu(g.data(), u.data(), whole.data(), 1000);
    std::vector<float> pieces = g;
    for (std::int64_t at = 0, len = 1; at < 1000; at += len, len = len % 37 + 5) {
      const std::int64_t n = std::min<std::int64_t>(len, 1000 - at);
      geglu(pieces.data() + at, u.data() + at, pieces.data() + at, n);
    }
    ASSERT_TRUE(testing::same_bytes(whole.data(), pieces.data(), whole.size())) << isa_name(isa);
  }
}

// The pool's blocks of rows give the bytes of one call, quantized or not.
TEST(Ops, EmbeddingRowsOnThePoolEqualOneCall) {
  ThreadPool pool(3);
  const auto plain = testing::make_weight(DType::kBF16, 50, 64, 5, 1);
  const auto quant = testing::quantize(random_floats(50 * 64, 6), 50, 64, 4, 32, DType::kBF16);
  for (const WeightView* table : {&plain.view, &quant.view}) {
    std::vector<std::int32_t> ids(70);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>(i * 7 % 50);
    std::vector<float> one(ids.size() * 64), split(one.size());
    embedding_rows(*table, ids.data(), 70, one.data());
    embedding_rows(pool, *table, ids.data(), 70, split.data());
    ASSERT_TRUE(testing::same_bytes(one.data(), split.data(), one.size()))
        << (table->quantized() ? "quantized" : "bf16");
  }
}

TEST(Ops, EmbeddingRowsConvertExactly) {
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    auto table = testing::make_weight(dt, 10, 7, 3, 1);
    const std::int32_t ids[4] = {9, 0, 3, 9};
    std::vector<float> out(28);
    embedding_rows(table.view, ids, 4, out.data());
    for (int i = 0; i < 4; ++i)
      for (int c = 0; c < 7; ++c)
        ASSERT_EQ(out[static_cast<std::size_t>(i * 7 + c)],
                  load_as_f32(table.view.slice_rows(ids[i], 1).data, dt, c));
  }
}

// Conv over a sequence in one call equals the same sequence in chunks (state carried), and the
// dispatch matches the reference.
TEST(Ops, Conv1dIsSplitInvariant) {
  const std::int64_t ch = kMaxWidth, kk = 4, n_tok = 23;
  auto w = random_floats(static_cast<std::size_t>(ch * kk), 1);
  auto bias = random_floats(static_cast<std::size_t>(ch), 2);
  auto x = random_floats(static_cast<std::size_t>(n_tok * (ch + 3)), 3, -2, 2);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    const float* biases[2] = {nullptr, bias.data()};
    for (const float* b : biases) {
      std::vector<float> state(static_cast<std::size_t>((kk - 1) * ch), 0.0f);
      std::vector<float> whole(static_cast<std::size_t>(n_tok * ch));
      const Conv1dShape base{.n_tokens = n_tok, .channels = ch, .kernel = kk, .x_stride = ch + 3};
      causal_conv1d(x.data(), w.data(), b, state.data(), whole.data(), base);
      std::vector<float> state_ref((kk - 1) * ch, 0.0f), want(whole.size());
      ref::causal_conv1d(x.data(), w.data(), b, state_ref.data(), want.data(), base);
      expect_near_all(whole, want, 2e-6f, std::string("conv ") + isa_name(isa));
      std::vector<float> s2((kk - 1) * ch, 0.0f), parts(whole.size());
      std::int64_t t0 = 0;
      for (std::int64_t len : {1, 2, 7, 13}) {
        Conv1dShape sh = base;
        sh.n_tokens = len;
        causal_conv1d(x.data() + t0 * (ch + 3), w.data(), b, s2.data(), parts.data() + t0 * ch, sh);
        t0 += len;
      }
      ASSERT_EQ(t0, n_tok);
      ASSERT_TRUE(testing::same_bytes(parts.data(), whole.data(), whole.size()));
      ASSERT_TRUE(testing::same_bytes(s2.data(), state.data(), s2.size()));
    }
  }
}

// On AVX-512 four taps run 16 channels at a time with the state in registers and a 16-lane SiLU;
// a call of fewer than 16 channels takes the general loop. Each channel depends only on its own
// data, so a 37-channel call (two register groups, five channels left over) must give every
// channel the bytes of that channel convolved alone, tokens, outputs and state alike. One token is
// scaled up so the SiLU's exp meets both of its clamps.
TEST(Ops, Conv1dFourTapGroupsEqualTheGeneralLoop) {
  const std::int64_t ch = 37, kk = 4;
  auto w = random_floats(static_cast<std::size_t>(kk * ch), 1);  // [K, ch]
  auto bias = random_floats(static_cast<std::size_t>(ch), 2);
  auto s0 = random_floats(static_cast<std::size_t>((kk - 1) * ch), 3);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (std::int64_t n_tok : {1, 9}) {
      for (bool silu : {false, true}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " tokens " + std::to_string(n_tok) +
                     (silu ? " silu" : ""));
        auto x = random_floats(static_cast<std::size_t>(n_tok * ch), 4, -3, 3);
        for (std::int64_t c = 0; c < ch; ++c)
          x[static_cast<std::size_t>((n_tok / 2) * ch + c)] *= 80;
        const Conv1dShape all{.n_tokens = n_tok, .channels = ch, .kernel = kk, .apply_silu = silu};
        auto state = s0;
        std::vector<float> y(x.size());
        causal_conv1d(x.data(), w.data(), bias.data(), state.data(), y.data(), all);
        for (std::int64_t c = 0; c < ch; ++c) {
          std::vector<float> wc(kk), sc(kk - 1), yc(static_cast<std::size_t>(n_tok));
          for (std::int64_t j = 0; j < kk; ++j) wc[j] = w[j * ch + c];
          for (std::int64_t j = 0; j + 1 < kk; ++j) sc[j] = s0[j * ch + c];
          const Conv1dShape one{.n_tokens = n_tok,
                                .channels = 1,
                                .kernel = kk,
                                .x_stride = ch,
                                .y_stride = 1,
                                .apply_silu = silu};
          causal_conv1d(x.data() + c, wc.data(), bias.data() + c, sc.data(), yc.data(), one);
          for (std::int64_t t = 0; t < n_tok; ++t) {
            ASSERT_TRUE(testing::same_bytes(&yc[t], &y[t * ch + c], 1)) << "channel " << c;
          }
          for (std::int64_t j = 0; j + 1 < kk; ++j) {
            ASSERT_TRUE(testing::same_bytes(&sc[j], &state[j * ch + c], 1)) << "state " << c;
          }
        }
      }
    }
  }
}

// A slice of the channels run as its own call (tap_stride: the full width) gives the whole call's
// bytes, outputs and state, on every ISA: prefill splits the conv over the pool this way.
TEST(Ops, Conv1dChannelSlicesEqualTheWholeCall) {
  const std::int64_t ch = 100, kk = 4, n_tok = 13;
  auto w = random_floats(static_cast<std::size_t>(kk * ch), 11);
  auto bias = random_floats(static_cast<std::size_t>(ch), 12);
  auto s0 = random_floats(static_cast<std::size_t>((kk - 1) * ch), 13);
  auto x = random_floats(static_cast<std::size_t>(n_tok * ch), 14, -3, 3);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    const Conv1dShape all{.n_tokens = n_tok, .channels = ch, .kernel = kk};
    auto state = s0;
    std::vector<float> y(x.size());
    causal_conv1d(x.data(), w.data(), bias.data(), state.data(), y.data(), all);
    for (const std::vector<std::int64_t>& cuts : std::vector<std::vector<std::int64_t>>{
             {0, 48, 100}, {0, 16, 37, 64, 100}, {0, 1, 99, 100}}) {
      auto sliced_state = s0;
      std::vector<float> sliced(x.size(), -1.0f);
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::int64_t c0 = cuts[i], c1 = cuts[i + 1];
        const Conv1dShape part{.n_tokens = n_tok,
                               .channels = c1 - c0,
                               .kernel = kk,
                               .x_stride = ch,
                               .y_stride = ch,
                               .tap_stride = ch};
        causal_conv1d(x.data() + c0, w.data() + c0, bias.data() + c0, sliced_state.data() + c0,
                      sliced.data() + c0, part);
      }
      ASSERT_TRUE(testing::same_bytes(sliced.data(), y.data(), y.size())) << isa_name(isa);
      ASSERT_TRUE(testing::same_bytes(sliced_state.data(), state.data(), state.size()))
          << isa_name(isa);
    }
  }
}

// In place (y == x) and for every kernel width 1..5, against the reference run out of place.
TEST(Ops, Conv1dInPlaceAndKernelWidths) {
  const std::int64_t ch = 70, n_tok = 9;
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (std::int64_t kk = 1; kk <= 5; ++kk) {
      auto w = random_floats(static_cast<std::size_t>(ch * kk), 1);
      auto x = random_floats(static_cast<std::size_t>(n_tok * ch), 2);
      auto s0 = random_floats(static_cast<std::size_t>((kk - 1) * ch), 3);
      const Conv1dShape shape{.n_tokens = n_tok, .channels = ch, .kernel = kk};
      auto s_ref = s0, s_got = s0, got = x;
      std::vector<float> want(x.size());
      ref::causal_conv1d(x.data(), w.data(), nullptr, s_ref.data(), want.data(), shape);
      causal_conv1d(got.data(), w.data(), nullptr, s_got.data(), got.data(), shape);
      expect_near_all(got, want, 2e-6f, std::string("conv in place ") + isa_name(isa));
      ASSERT_TRUE(testing::same_bytes(s_got.data(), s_ref.data(), s_ref.size())) << kk;
    }
  }
}

}  // namespace
}  // namespace recur::kernels
