#include "engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/sampling.h"
#include "util/check.h"

namespace recur::engine {

Status validate(const SamplingParams& p) {
  auto bad = [](const char* field, const char* range, double v) -> Status {
    return Error(StatusCode::kInvalidArgument, "{} must be {}, got {}", field, range, v);
  };
  if (!(p.temperature >= 0 && p.temperature <= 100))
    return bad("temperature", "in [0, 100]", p.temperature);
  if (p.top_k < 0) return bad("top_k", ">= 0", p.top_k);
  if (!(p.top_p > 0 && p.top_p <= 1)) return bad("top_p", "in (0, 1]", p.top_p);
  if (!(p.min_p >= 0 && p.min_p <= 1)) return bad("min_p", "in [0, 1]", p.min_p);
  if (!(p.presence_penalty >= -2 && p.presence_penalty <= 2)) {
    return bad("presence_penalty", "in [-2, 2]", p.presence_penalty);
  }
  if (!(p.frequency_penalty >= -2 && p.frequency_penalty <= 2)) {
    return bad("frequency_penalty", "in [-2, 2]", p.frequency_penalty);
  }
  if (!(p.repetition_penalty > 0 && p.repetition_penalty <= 10)) {
    return bad("repetition_penalty", "in (0, 10]", p.repetition_penalty);
  }
  if (p.top_logprobs < 0 || p.top_logprobs > 20)
    return bad("top_logprobs", "in [0, 20]", p.top_logprobs);
  for (const auto& [id, bias] : p.logit_bias) {
    if (!(bias >= -100 && bias <= 100)) {
      return Error(StatusCode::kInvalidArgument,
                   "logit_bias of token {} must be in [-100, 100], got {}", id, bias);
    }
  }
  return Status::ok();
}

std::uint64_t Rng::next_u64() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::next_unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

void log_softmax(std::span<const float> logits, std::span<float> out) {
  RECUR_CHECK(out.size() == logits.size());
  double max = -std::numeric_limits<double>::infinity();
  for (float l : logits) max = std::max(max, static_cast<double>(l));
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  double log_z = max + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) {
    out[i] = static_cast<float>(static_cast<double>(logits[i]) - log_z);
  }
}

Sampler::Sampler(const SamplingParams& params, std::span<const TokenId> prompt)
    : params_(params), rng_(params.seed) {
  for (TokenId t : prompt) {
    if (!seen_set_[t]) {
      seen_set_[t] = true;
      seen_.push_back(t);
    }
  }
}

void Sampler::apply_penalties(std::vector<float>& logits) const {
  const auto n = static_cast<TokenId>(logits.size());
  for (const auto& [t, bias] : params_.logit_bias) {
    if (t >= 0 && t < n) logits[static_cast<std::size_t>(t)] += bias;
  }
  if (params_.repetition_penalty != 1.0f) {
    for (TokenId t : seen_) {
      if (t < 0 || t >= n) continue;
      float& l = logits[static_cast<size_t>(t)];
      l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    }
  }
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
    for (const auto& [t, count] : generated_counts_) {
      if (t < 0 || t >= n) continue;
      logits[static_cast<size_t>(t)] -=
          params_.presence_penalty + params_.frequency_penalty * static_cast<float>(count);
    }
  }
}

namespace {

// Most likely first; equal logits go to the lower id, so the order is total and deterministic.
struct ByLogitDesc {
  const float* logits;
  bool operator()(TokenId a, TokenId b) const {
    float la = logits[a], lb = logits[b];
    return la > lb || (la == lb && a < b);
  }
};

bool is_allowed(const std::uint64_t* allowed, std::size_t id) {
  return allowed == nullptr || ((allowed[id >> 6] >> (id & 63)) & 1) != 0;
}

}  // namespace

SampleResult Sampler::sample(std::span<const float> logits) {
  RECUR_CHECK(!logits.empty());
  return draw(logits, nullptr);
}

std::optional<SampleResult> Sampler::sample(std::span<const float> logits,
                                            const TokenFilter& filter) {
  RECUR_CHECK(!logits.empty());
  const std::size_t n = logits.size();
  const std::size_t words = (n + 63) / 64;
  allowed_.assign(words, filter.all ? ~std::uint64_t{0} : 0);
  if (!filter.all) {
    std::copy_n(filter.bits.begin(), std::min(filter.bits.size(), words), allowed_.begin());
  }
  if (n % 64 != 0) allowed_[words - 1] &= (std::uint64_t{1} << (n % 64)) - 1;
  auto set = [&](TokenId t, bool on) {
    if (t < 0 || static_cast<std::size_t>(t) >= n) return;
    const auto id = static_cast<std::size_t>(t);
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    allowed_[id >> 6] = on ? allowed_[id >> 6] | bit : allowed_[id >> 6] & ~bit;
  };
  for (TokenId t : filter.stop_ids) set(t, filter.allow_stop);
  set(filter.also, true);
  if (std::all_of(allowed_.begin(), allowed_.end(), [](std::uint64_t w) { return w == 0; })) {
    return std::nullopt;
  }
  return draw(logits, allowed_.data());
}

SampleResult Sampler::draw(std::span<const float> logits, const std::uint64_t* allowed) {
  const double u = rng_.next_unit();  // advanced once per token, whatever the parameters
  const size_t n = logits.size();
  const float* x = logits.data();
  if (!params_.logit_bias.empty() || params_.repetition_penalty != 1.0f ||
      params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
    work_.assign(logits.begin(), logits.end());
    apply_penalties(work_);
    x = work_.data();
  }

  SampleResult result;
  if (params_.temperature == 0.0f || params_.top_k == 1) {
    // The first of the highest, so ties go to the lower id.
    const float best = kernels::sample_max(x, static_cast<std::int64_t>(n), allowed);
    for (size_t i = 0; i < n; ++i) {
      if (x[i] == best && is_allowed(allowed, i)) {
        result.id = static_cast<TokenId>(i);
        break;
      }
    }
  } else if (params_.top_k == 0 && params_.top_p >= 1.0f) {
    result.id = draw_unsorted(x, n, allowed, u);
  } else {
    result.id = draw_sorted(x, n, allowed, u);
  }

  if (params_.logprobs || params_.top_logprobs > 0) {
    work_.resize(n);
    log_softmax(logits, work_);
    result.logprob = work_[static_cast<size_t>(result.id)];
    size_t k = std::min<size_t>(static_cast<size_t>(params_.top_logprobs), n);
    order_.resize(n);
    for (size_t i = 0; i < n; ++i) order_[i] = static_cast<TokenId>(i);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<long>(k), order_.end(),
                      ByLogitDesc{work_.data()});
    for (size_t i = 0; i < k; ++i) result.top.push_back({order_[i], work_[order_[i]]});
  }

  record(result.id);
  return result;
}

TokenId Sampler::draw_unsorted(const float* x, std::size_t n, const std::uint64_t* allowed,
                               double u) {
  // Every allowed token's weight, in blocks of 64 ids (kernels/sampling.h); the walk skips whole
  // blocks below the threshold and goes id by id only from the block that holds it.
  const float inv_t = 1.0f / params_.temperature;
  kernels::SampleRow row{.logits = x,
                         .n = static_cast<std::int64_t>(n),
                         .scale = inv_t,
                         .allowed = allowed,
                         .floor = params_.min_p};
  // Rounding is monotonic, so the largest scaled logit is the largest logit scaled.
  row.shift = kernels::sample_max(x, row.n, allowed) * inv_t;
  const std::size_t n_blocks = (n + kernels::kSampleBlock - 1) / kernels::kSampleBlock;
  blocks_.resize(n_blocks);
  kernels::sample_block_sums(row, blocks_.data());
  double total = 0;
  for (double b : blocks_) total += b;
  const double threshold = u * total;
  double cum = 0;
  std::size_t b = 0;
  while (b < n_blocks && cum + blocks_[b] <= threshold) cum += blocks_[b++];
  for (auto i = static_cast<std::int64_t>(b) * kernels::kSampleBlock; i < row.n; ++i) {
    cum += kernels::sample_weight(row, i);
    if (cum > threshold) return static_cast<TokenId>(i);
  }
  // Rounding left the threshold past the last sum: the last candidate.
  for (std::int64_t i = row.n - 1; i > 0; --i) {
    if (kernels::sample_allowed(row, i) &&
        (row.floor == 0.0f || kernels::sample_weight(row, i) > 0.0f)) {
      return static_cast<TokenId>(i);
    }
  }
  return 0;
}

TokenId Sampler::draw_sorted(const float* x, std::size_t n, const std::uint64_t* allowed,
                             double u) {
  order_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (is_allowed(allowed, i)) order_.push_back(static_cast<TokenId>(i));
  }
  const std::size_t m = order_.size();
  const float inv_t = 1.0f / params_.temperature;
  scaled_.resize(n);
  for (std::size_t i = 0; i < m; ++i) {
    const auto id = static_cast<std::size_t>(order_[i]);
    scaled_[id] = x[id] * inv_t;
  }
  ByLogitDesc cmp{scaled_.data()};
  size_t n_keep = m;
  size_t n_sorted = 0;  // order_[0, n_sorted) is sorted most likely first
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < m) {
    n_keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<long>(n_keep),
                      order_.begin() + static_cast<long>(m), cmp);
    n_sorted = n_keep;
  }
  float max = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n_keep; ++i) max = std::max(max, scaled_[static_cast<size_t>(order_[i])]);
  // Each kept candidate's weight once, by id: the loops below read it back.
  exp_.resize(n);
  for (size_t i = 0; i < n_keep; ++i) {
    const auto id = static_cast<size_t>(order_[i]);
    exp_[id] = kernels::sample_exp(scaled_[id] - max);
  }
  if (params_.top_p < 1.0f) {
    double total = 0;
    for (size_t i = 0; i < n_keep; ++i) total += exp_[static_cast<size_t>(order_[i])];
    // Sort a growing head until it holds top_p of the mass: exact, and cheap when the
    // distribution is peaked; falls back to a full sort for flat ones.
    const double target = params_.top_p * total;
    for (size_t head = std::min<size_t>(n_keep, 256);; head = std::min(n_keep, head * 4)) {
      if (n_sorted < head) {
        std::partial_sort(order_.begin(), order_.begin() + static_cast<long>(head),
                          order_.begin() + static_cast<long>(n_keep), cmp);
        n_sorted = head;
      }
      double cum = 0;
      size_t cut = 0;
      while (cut < head && cum < target) cum += exp_[static_cast<size_t>(order_[cut++])];
      if (cum >= target || head == n_keep) {
        n_keep = std::max<size_t>(cut, 1);
        break;
      }
    }
  }
  if (params_.min_p > 0.0f) {
    // p_i >= min_p * p_max  <=>  exp(l_i - max) >= min_p.
    size_t w = 0;
    for (size_t i = 0; i < n_keep; ++i) {
      if (exp_[static_cast<size_t>(order_[i])] >= params_.min_p) order_[w++] = order_[i];
    }
    n_keep = std::max<size_t>(w, 1);
  }
  // The kept candidates in order, in sums of blocks of 64 (four lanes each); the walk skips whole
  // blocks below the threshold.
  constexpr size_t kBlock = 64;
  const size_t n_blocks = (n_keep + kBlock - 1) / kBlock;
  blocks_.resize(n_blocks);
  double total = 0;
  for (size_t b = 0; b < n_blocks; ++b) {
    const size_t begin = b * kBlock, end = std::min(n_keep, begin + kBlock);
    double lane[4] = {0, 0, 0, 0};
    for (size_t i = begin; i < end; ++i) lane[i & 3] += exp_[static_cast<size_t>(order_[i])];
    blocks_[b] = (lane[0] + lane[1]) + (lane[2] + lane[3]);
    total += blocks_[b];
  }
  const double threshold = u * total;
  double cum = 0;
  size_t b = 0;
  while (b < n_blocks && cum + blocks_[b] <= threshold) cum += blocks_[b++];
  for (size_t i = b * kBlock; i < n_keep; ++i) {
    cum += exp_[static_cast<size_t>(order_[i])];
    if (cum > threshold) return order_[i];
  }
  return order_[n_keep - 1];
}

void Sampler::record(TokenId id) {
  ++n_generated_;
  ++generated_counts_[id];
  if (!seen_set_[id]) {
    seen_set_[id] = true;
    seen_.push_back(id);
  }
}

}  // namespace recur::engine
