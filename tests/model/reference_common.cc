// Shared float64 helpers of the reference forward (spec sections 0.1, 0.2).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "kernels/dtype.h"
#include "kernels/quant.h"
#include "model/family.h"
#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {
int g_quant_bits = 0, g_quant_group = 0;
std::string g_quant_family;
const std::vector<std::int32_t>* g_routes = nullptr;
double g_margin = 0.0;
std::size_t g_routed = 0;  // decisions taken from g_routes
RoutingStats g_stats;
}  // namespace

void set_engine_routes(const std::vector<std::int32_t>* routes, double margin) {
  g_routes = routes;
  g_margin = margin;
  g_routed = 0;
  g_stats = {};
}

RoutingStats routing_stats() { return g_stats; }

void check_routes_consumed() {
  if (g_routes != nullptr) RECUR_CHECK(g_routed == g_routes->size());
}

namespace {

// Indices of `keys` in descending order, the lower index first on equal keys.
std::vector<std::size_t> descending(const Vec& keys) {
  std::vector<std::size_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return keys[a] > keys[b]; });
  return order;
}

// The decision's own experts, or the engine's (taking its next k from the log) where `gap`, the
// decision's margin, is below the near-tie margin and they differ.
std::vector<std::size_t> decide(std::vector<std::size_t> own, std::size_t k, double gap);

}  // namespace

std::vector<std::size_t> route_next(const Vec& keys, std::size_t k) {
  std::vector<std::size_t> order = descending(keys);
  const double gap = k < keys.size() ? keys[order[k - 1]] - keys[order[k]] : 1e300;
  order.resize(k);
  return decide(order, k, gap);
}

std::vector<std::size_t> route_next_grouped(const Vec& keys, std::size_t k, std::size_t n_groups,
                                            std::size_t topk_groups) {
  if (n_groups <= 1) return route_next(keys, k);
  const std::size_t per_group = keys.size() / n_groups;
  Vec group_scores(n_groups);
  for (std::size_t g = 0; g < n_groups; ++g) {
    Vec members(keys.begin() + static_cast<std::ptrdiff_t>(g * per_group),
                keys.begin() + static_cast<std::ptrdiff_t>((g + 1) * per_group));
    std::sort(members.begin(), members.end(), std::greater<>());
    group_scores[g] = members[0] + members[1];
  }
  const std::vector<std::size_t> groups = descending(group_scores);
  const double group_gap = topk_groups < n_groups ? group_scores[groups[topk_groups - 1]] -
                                                        group_scores[groups[topk_groups]]
                                                  : 1e300;
  Vec masked(keys.size(), -std::numeric_limits<double>::infinity());
  for (std::size_t j = 0; j < topk_groups; ++j) {
    for (std::size_t e = groups[j] * per_group; e < (groups[j] + 1) * per_group; ++e) {
      masked[e] = keys[e];
    }
  }
  std::vector<std::size_t> order = descending(masked);
  const double expert_gap = masked[order[k - 1]] - masked[order[k]];  // +inf past the kept groups
  order.resize(k);
  return decide(order, k, std::min(group_gap, expert_gap));
}

namespace {

std::vector<std::size_t> decide(std::vector<std::size_t> own, std::size_t k, double gap) {
  ++g_stats.decisions;
  if (g_routes == nullptr) return own;
  RECUR_CHECK(g_routed + k <= g_routes->size());
  const std::int32_t* engine = g_routes->data() + g_routed;
  g_routed += k;
  if (gap >= 1e300) return own;  // nothing left out: no choice to make
  g_stats.min_gap = std::min(g_stats.min_gap, gap);
  std::vector<std::size_t> theirs(engine, engine + k), a = own, b = theirs;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a == b || gap >= g_margin) return own;
  ++g_stats.near_ties_taken;
  return theirs;
}

}  // namespace

void set_quantization(int bits, int group_size, std::string_view family) {
  g_quant_bits = bits;
  g_quant_group = group_size;
  g_quant_family = family;
}

Tensor load(const Checkpoint& ck, const std::string& name) {
  const TensorInfo* t = ck.find(name);
  RECUR_CHECK_MSG(t != nullptr, name.c_str());
  Tensor out;
  out.shape = t->shape;
  out.bf16 = t->dtype == DType::kBF16;
  const std::size_t elem = t->dtype == DType::kF32 ? 4 : 2;
  out.v.resize(t->n_bytes / elem);
  for (std::size_t i = 0; i < out.v.size(); ++i) {
    const std::uint8_t* p = t->data + i * elem;
    if (t->dtype == DType::kF32) {
      float f;
      std::memcpy(&f, p, 4);
      out.v[i] = f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      out.v[i] = t->dtype == DType::kBF16 ? kernels::bf16_to_f32(h) : kernels::f16_to_f32(h);
    }
  }
  // Stacked experts [E, rows, cols] quantize row by row as each expert's matrix does; the
  // family's routers at 8 bits in groups of 64, as the loader quantizes them.
  int bits = g_quant_bits, group = g_quant_group;
  if (bits != 0 && name.ends_with(".weight") &&
      model::mlx_keeps_at_8_bits(g_quant_family, name.substr(0, name.size() - 7))) {
    bits = 8;
    group = 64;
  }
  // Nemotron-H's router stays floating (model::mlx_keeps_floating).
  if (name.ends_with(".weight") &&
      model::mlx_keeps_floating(g_quant_family, name.substr(0, name.size() - 7))) {
    bits = 0;
  }
  if (bits != 0 && (out.shape.size() == 2 || out.shape.size() == 3) && name.ends_with(".weight") &&
      out.shape.back() % group == 0) {
    const std::int64_t cols = out.shape.back();
    const auto rows = static_cast<std::int64_t>(out.v.size()) / cols;
    std::vector<float> w(out.v.begin(), out.v.end());
    std::vector<std::uint32_t> codes(static_cast<std::size_t>(rows * cols * bits / 32));
    std::vector<float> scales(static_cast<std::size_t>(rows * (cols / group)));
    std::vector<float> biases(scales.size());
    // Scales and biases are kept in the weight's dtype, as the loader keeps them.
    const kernels::DType sd = *t->dtype;
    std::vector<std::uint8_t> s_bytes(scales.size() * 4), b_bytes(scales.size() * 4);
    kernels::quantize_rows(w.data(), rows, cols, bits, group, sd, codes.data(), s_bytes.data(),
                           b_bytes.data());
    const kernels::MlxQuantized view{.codes = codes.data(),
                                     .scales = s_bytes.data(),
                                     .biases = b_bytes.data(),
                                     .dtype = sd,
                                     .rows = rows,
                                     .cols = cols,
                                     .bits = bits,
                                     .group_size = group};
    std::vector<float> row(static_cast<std::size_t>(cols));
    for (std::int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_row(view, r, row.data());
      for (std::int64_t c = 0; c < cols; ++c) {
        out.v[static_cast<std::size_t>(r * cols + c)] = row[static_cast<std::size_t>(c)];
      }
    }
    out.bf16 = false;
    out.quant_group = group;
  }
  return out;
}

Vec matvec(const Tensor& w, const Vec& x) {
  const std::int64_t rows = w.rows(), cols = w.cols();
  RECUR_CHECK(static_cast<std::int64_t>(x.size()) == cols);
  Vec xin = x;
  if (w.bf16) {
    for (double& e : xin) e = kernels::round_to_bf16(static_cast<float>(e));
  }
  if (w.quant_group != 0) {
    // The engine's int8 rows (kernels::quantize_activation_row), in its f32 arithmetic.
    std::vector<float> xf(xin.begin(), xin.end());
    std::vector<std::int8_t> q(xf.size());
    std::vector<float> d(xf.size() / static_cast<std::size_t>(w.quant_group)), xs(d.size());
    kernels::quantize_activation_row(xf.data(), cols, w.quant_group,
                                     {.q = q.data(), .d = d.data(), .xsum = xs.data()});
    for (std::size_t i = 0; i < xin.size(); ++i) {
      xin[i] = static_cast<double>(d[i / static_cast<std::size_t>(w.quant_group)]) * q[i];
    }
  }
  Vec y(static_cast<std::size_t>(rows), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (std::int64_t c = 0; c < cols; ++c)
      s += w.v[static_cast<std::size_t>(r * cols + c)] * xin[static_cast<std::size_t>(c)];
    y[static_cast<std::size_t>(r)] = s;
  }
  return y;
}

Vec rms_norm(const Vec& x, const Vec& w, double eps, bool zero_centred) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * (zero_centred ? 1.0 + w[i] : w[i]);
  return y;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

void rope(double* head, std::int64_t rotary_dim, std::int64_t pos, double theta) {
  const std::int64_t half = rotary_dim / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const double angle =
        static_cast<double>(pos) *
        std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dim));
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = head[i], b = head[i + half];
    head[i] = a * c - b * s;
    head[i + half] = b * c + a * s;
  }
}

double cfg(const Checkpoint& ck, const std::string& key, double fallback) {
  auto r = ck.config().get_float(key, fallback);
  RECUR_CHECK_MSG(r.is_ok(), key.c_str());
  return *r;
}

}  // namespace recur::model::reference

namespace recur::model::reference {

std::vector<Vec> causal_attention(const std::vector<Vec>& q, const std::vector<Vec>& k,
                                  const std::vector<Vec>& v, std::int64_t n_heads,
                                  std::int64_t n_kv_heads, std::int64_t head_dim) {
  const std::size_t T = q.size();
  const std::int64_t group = n_heads / n_kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  std::vector<Vec> out(T, Vec(static_cast<std::size_t>(n_heads * head_dim), 0.0));
  for (std::size_t t = 0; t < T; ++t) {
    for (std::int64_t h = 0; h < n_heads; ++h) {
      const std::int64_t kh = h / group;
      Vec p(t + 1);
      double mx = -1e300;
      for (std::size_t s = 0; s <= t; ++s) {
        double dot = 0.0;
        for (std::int64_t d = 0; d < head_dim; ++d) {
          dot += q[t][static_cast<std::size_t>(h * head_dim + d)] *
                 k[s][static_cast<std::size_t>(kh * head_dim + d)];
        }
        p[s] = dot * scale;
        mx = std::max(mx, p[s]);
      }
      double sum = 0.0;
      for (double& x : p) sum += (x = std::exp(x - mx));
      for (std::size_t s = 0; s <= t; ++s) {
        for (std::int64_t d = 0; d < head_dim; ++d) {
          out[t][static_cast<std::size_t>(h * head_dim + d)] +=
              p[s] / sum * v[s][static_cast<std::size_t>(kh * head_dim + d)];
        }
      }
    }
  }
  return out;
}

void round_like_kv_cache(const Checkpoint& ck, std::vector<Vec>* k, std::vector<Vec>* v) {
  for (const char* key : {"torch_dtype", "dtype"}) {
    auto d = ck.config().get_string(key);
    if (d.is_ok() && *d == "float32") return;
  }
  for (auto* rows : {k, v}) {
    for (Vec& row : *rows) {
      for (double& e : row) e = kernels::round_to_bf16(static_cast<float>(e));
    }
  }
}

std::vector<Vec> head_logits(const Checkpoint& ck, const std::vector<Vec>& h, const Tensor& embed) {
  auto tied = ck.config().get_bool("tie_word_embeddings", false);
  RECUR_CHECK(tied.is_ok());
  const Tensor head = *tied ? embed : load(ck, "lm_head.weight");
  std::vector<Vec> out;
  for (const Vec& x : h) out.push_back(matvec(head, x));
  return out;
}

}  // namespace recur::model::reference
