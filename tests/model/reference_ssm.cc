// The Mamba2 mixer of the hybrids (Granite 4.0-H, Nemotron-H), float64, whole sequence at once
// with the per-token recurrence (spec 4.3): in_proj → causal conv (+ bias) → silu → SSM scan →
// gate-then-norm per group of d_inner / n_groups → out_proj. Written apart from
// reference_mamba2.cc so the family references share one oracle of the mixer.
#include <cmath>

#include "reference.h"

namespace recur::model::reference {

std::vector<Vec> mamba2_mixer(const Checkpoint& ck, const std::string& m, const Mamba2Geometry& g,
                              const std::vector<Vec>& x) {
  const std::int64_t H = g.n_heads, P = g.head_dim, N = g.d_state, G = g.n_groups, K = g.kernel;
  const std::int64_t di = H * P, cd = di + 2 * G * N;
  const Tensor win = load(ck, m + "in_proj.weight"), conv = load(ck, m + "conv1d.weight");
  Tensor conv_b;
  if (g.conv_bias) conv_b = load(ck, m + "conv1d.bias");
  const Tensor dt_bias = load(ck, m + "dt_bias"), a_log = load(ck, m + "A_log");
  const Tensor D = load(ck, m + "D"), gn = load(ck, m + "norm.weight");
  const Tensor wout = load(ck, m + "out_proj.weight");
  auto at = [](const Tensor& w, std::int64_t i) { return w.v[static_cast<std::size_t>(i)]; };
  const std::size_t T = x.size();
  std::vector<Vec> zx(T), out(T);
  Tensor in_b, out_b;
  if (g.proj_bias) in_b = load(ck, m + "in_proj.bias"), out_b = load(ck, m + "out_proj.bias");
  for (std::size_t t = 0; t < T; ++t) {
    zx[t] = matvec(win, x[t]);
    for (std::size_t i = 0; g.proj_bias && i < zx[t].size(); ++i) zx[t][i] += in_b.v[i];
  }
  std::vector<Vec> S(static_cast<std::size_t>(H), Vec(static_cast<std::size_t>(P * N), 0.0));
  for (std::size_t t = 0; t < T; ++t) {
    Vec xbc(static_cast<std::size_t>(cd));
    for (std::int64_t c = 0; c < cd; ++c) {
      double s = g.conv_bias ? at(conv_b, c) : 0.0;
      for (std::int64_t j = 0; j < K; ++j) {
        const std::int64_t tau = static_cast<std::int64_t>(t) - K + 1 + j;
        if (tau >= 0) {
          s += at(conv, c * K + j) *
               zx[static_cast<std::size_t>(tau)][static_cast<std::size_t>(di + c)];
        }
      }
      xbc[static_cast<std::size_t>(c)] = silu(s);
    }
    Vec y(static_cast<std::size_t>(di));
    for (std::int64_t hh = 0; hh < H; ++hh) {
      const std::int64_t grp = hh / (H / G);
      double dt = softplus(zx[t][static_cast<std::size_t>(di + cd + hh)] + at(dt_bias, hh));
      dt = std::min(std::max(dt, g.dt_min), g.dt_max);
      const double dA = std::exp(dt * -std::exp(at(a_log, hh)));
      Vec& Sh = S[static_cast<std::size_t>(hh)];  // [P][N]
      for (std::int64_t pp = 0; pp < P; ++pp) {
        const double xv = xbc[static_cast<std::size_t>(hh * P + pp)];
        double acc = 0.0;
        for (std::int64_t n = 0; n < N; ++n) {
          double& s = Sh[static_cast<std::size_t>(pp * N + n)];
          s = dA * s + dt * xv * xbc[static_cast<std::size_t>(di + grp * N + n)];
          acc += s * xbc[static_cast<std::size_t>(di + G * N + grp * N + n)];
        }
        y[static_cast<std::size_t>(hh * P + pp)] = acc + at(D, hh) * xv;
      }
    }
    for (std::int64_t i = 0; i < di; ++i) {
      y[static_cast<std::size_t>(i)] *= silu(zx[t][static_cast<std::size_t>(i)]);
    }
    const std::int64_t NG = g.norm_groups > 0 ? g.norm_groups : G;
    const std::int64_t gs = di / NG;
    for (std::int64_t grp = 0; grp < NG; ++grp) {
      Vec part(y.begin() + grp * gs, y.begin() + (grp + 1) * gs);
      Vec w(gn.v.begin() + grp * gs, gn.v.begin() + (grp + 1) * gs);
      part = rms_norm(part, w, g.eps, false);
      std::copy(part.begin(), part.end(), y.begin() + grp * gs);
    }
    out[t] = matvec(wout, y);
    for (std::size_t i = 0; g.proj_bias && i < out[t].size(); ++i) out[t][i] += out_b.v[i];
  }
  return out;
}

}  // namespace recur::model::reference
