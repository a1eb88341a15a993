// Reference Mamba2 forward (spec 4.3), float64, per-token recurrence; gated norm per group of
// d_inner / n_groups (mamba_ssm form; equal to HF when n_groups = 1).
#include <cmath>
#include <limits>

#include "reference.h"

namespace recur::model::reference {

std::vector<Vec> forward_mamba2(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_heads", 128));
  const auto P = static_cast<std::int64_t>(cfg(ck, "head_dim", 64));
  const auto N = static_cast<std::int64_t>(cfg(ck, "state_size", 128));
  const auto G = static_cast<std::int64_t>(cfg(ck, "n_groups", 8));
  const auto K = static_cast<std::int64_t>(cfg(ck, "conv_kernel", 4));
  const double eps = cfg(ck, "layer_norm_epsilon", 1e-5);
  double dt_lo = 0.0, dt_hi = std::numeric_limits<double>::infinity();
  if (ck.config().has("time_step_limit")) {
    auto lim = *ck.config().get_floats("time_step_limit");
    dt_lo = lim[0];
    dt_hi = lim[1];
  }
  const std::int64_t di = H * P, cd = di + 2 * G * N;
  const Tensor embed = load(ck, "backbone.embeddings.weight");
  const std::size_t T = tokens.size();
  const auto d = static_cast<std::size_t>(embed.cols());
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    h[t].assign(embed.v.begin() + static_cast<std::ptrdiff_t>(tokens[t] * d),
                embed.v.begin() + static_cast<std::ptrdiff_t>((tokens[t] + 1) * d));
  }
  auto at = [](const Tensor& w, std::int64_t i) { return w.v[static_cast<std::size_t>(i)]; };
  for (int l = 0; l < L; ++l) {
    const std::string p = "backbone.layers." + std::to_string(l) + ".";
    const Tensor wn = load(ck, p + "norm.weight"), win = load(ck, p + "mixer.in_proj.weight");
    const Tensor conv = load(ck, p + "mixer.conv1d.weight"),
                 conv_b = load(ck, p + "mixer.conv1d.bias");
    const Tensor dt_bias = load(ck, p + "mixer.dt_bias"), a_log = load(ck, p + "mixer.A_log");
    const Tensor D = load(ck, p + "mixer.D"), gn = load(ck, p + "mixer.norm.weight");
    const Tensor wout = load(ck, p + "mixer.out_proj.weight");
    std::vector<Vec> zx(T);
    for (std::size_t t = 0; t < T; ++t) zx[t] = matvec(win, rms_norm(h[t], wn.v, eps, false));
    std::vector<Vec> S(static_cast<std::size_t>(H), Vec(static_cast<std::size_t>(P * N), 0.0));
    for (std::size_t t = 0; t < T; ++t) {
      Vec xbc(static_cast<std::size_t>(cd));
      for (std::int64_t c = 0; c < cd; ++c) {
        double s = at(conv_b, c);
        for (std::int64_t j = 0; j < K; ++j) {
          const std::int64_t tau = static_cast<std::int64_t>(t) - K + 1 + j;
          if (tau >= 0)
            s += at(conv, c * K + j) *
                 zx[static_cast<std::size_t>(tau)][static_cast<std::size_t>(di + c)];
        }
        xbc[static_cast<std::size_t>(c)] = silu(s);
      }
      Vec y(static_cast<std::size_t>(di));
      for (std::int64_t hh = 0; hh < H; ++hh) {
        const std::int64_t g = hh / (H / G);
        double dt = softplus(zx[t][static_cast<std::size_t>(di + cd + hh)] + at(dt_bias, hh));
        dt = std::min(std::max(dt, dt_lo), dt_hi);
        const double dA = std::exp(dt * -std::exp(at(a_log, hh)));
        Vec& Sh = S[static_cast<std::size_t>(hh)];  // [P][N]
        for (std::int64_t pp = 0; pp < P; ++pp) {
          const double xv = xbc[static_cast<std::size_t>(hh * P + pp)];
          double acc = 0.0;
          for (std::int64_t n = 0; n < N; ++n) {
            double& s = Sh[static_cast<std::size_t>(pp * N + n)];
            s = dA * s + dt * xv * xbc[static_cast<std::size_t>(di + g * N + n)];
            acc += s * xbc[static_cast<std::size_t>(di + G * N + g * N + n)];
          }
          y[static_cast<std::size_t>(hh * P + pp)] = acc + at(D, hh) * xv;
        }
      }
      // Gate then norm, per group of di / G channels.
      for (std::int64_t i = 0; i < di; ++i)
        y[static_cast<std::size_t>(i)] *= silu(zx[t][static_cast<std::size_t>(i)]);
      const std::int64_t gs = di / G;
      for (std::int64_t g = 0; g < G; ++g) {
        Vec part(y.begin() + g * gs, y.begin() + (g + 1) * gs);
        Vec w(gn.v.begin() + g * gs, gn.v.begin() + (g + 1) * gs);
        part = rms_norm(part, w, eps, false);
        std::copy(part.begin(), part.end(), y.begin() + g * gs);
      }
      const Vec o = matvec(wout, y);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += o[i];
    }
  }
  const Tensor wf = load(ck, "backbone.norm_f.weight");
  for (Vec& x : h) x = rms_norm(x, wf.v, eps, false);
  return head_logits(ck, h, embed);
}

}  // namespace recur::model::reference
