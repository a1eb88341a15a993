// Split and batch invariance (design invariant 1) on all three families, as stored (bf16) and
// quantized on load to 4 and 8 bits, for every ISA this CPU has: the logits of a position are the
// same bytes whether computed in one prefill, in random chunks, after restoring a snapshot, in
// decode steps, alone or batched with other sequences, with 1 or 3 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>

#include "kernels/isa.h"
#include "model/model.h"
#include "test_util.h"

namespace recur::model {
namespace {

using testing::make_checkpoint;
using testing::TempDir;

// Longer than two attention key blocks (kernels::kAttentionBlock = 64), so chunks straddle blocks.
constexpr int kSeqLen = 150;

std::vector<std::int32_t> random_tokens(std::mt19937& rng, std::int64_t vocab, int n) {
  std::uniform_int_distribution<std::int32_t> d(0, static_cast<std::int32_t>(vocab - 1));
  std::vector<std::int32_t> out(static_cast<std::size_t>(n));
  for (auto& t : out) t = d(rng);
  return out;
}

// Forwards `chunk` of `seq` and appends the logits of every position to `out`.
void forward_all(Model& m, ThreadPool& pool, SequenceState* seq,
                 std::span<const std::int32_t> chunk, std::vector<float>* out) {
  SeqChunk c{.seq = seq, .tokens = chunk, .logits = LogitsWanted::kAll};
  auto r = m.forward(pool, {&c, 1});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  out->insert(out->end(), r->data, r->data + r->n_rows * r->vocab_size);
}

// The logits of one prefill of all tokens, single thread: the reference bytes.
std::vector<float> one_prefill(Model& m, const std::vector<std::int32_t>& tokens) {
  ThreadPool pool(1);
  auto seq = m.new_sequence();
  std::vector<float> out;
  forward_all(m, pool, seq.get(), tokens, &out);
  return out;
}

void expect_same_bytes(const std::vector<float>& want, const std::vector<float>& got,
                       std::int64_t vocab, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0) return;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0) {
      FAIL() << what << ": first difference at position " << i / static_cast<std::size_t>(vocab)
             << " logit " << i % static_cast<std::size_t>(vocab) << ": " << want[i] << " vs "
             << got[i];
    }
  }
}

// Random chunking of one sequence, with the given thread count.
void check_random_chunks(Model& m, const std::vector<std::int32_t>& tokens,
                         const std::vector<float>& want, std::mt19937& rng, int threads) {
  ThreadPool pool(threads);
  auto seq = m.new_sequence();
  std::vector<float> got;
  std::size_t at = 0;
  while (at < tokens.size()) {
    std::size_t n = std::uniform_int_distribution<std::size_t>(1, tokens.size() - at)(rng);
    forward_all(m, pool, seq.get(), std::span(tokens).subspan(at, n), &got);
    at += n;
  }
  expect_same_bytes(want, got, m.vocab_size(), "random chunks, threads " + std::to_string(threads));
}

// Prefill k tokens, snapshot, restore into a fresh sequence, then decode one token at a time.
void check_snapshot_then_decode(Model& m, const std::vector<std::int32_t>& tokens,
                                const std::vector<float>& want, std::size_t k) {
  ThreadPool pool(3);
  auto seq = m.new_sequence();
  std::vector<float> got;
  forward_all(m, pool, seq.get(), std::span(tokens).first(k), &got);
  auto snap = seq->snapshot();
  auto other = m.new_sequence();
  ASSERT_TRUE(other->restore(*snap).is_ok());
  for (std::size_t i = k; i < tokens.size(); ++i) {
    forward_all(m, pool, other.get(), std::span(tokens).subspan(i, 1), &got);
  }
  expect_same_bytes(want, got, m.vocab_size(), "snapshot at " + std::to_string(k) + " + decode");
}

// Three sequences advanced together in mixed batches (prefill chunks and decode steps).
void check_batched(Model& m, const std::vector<std::vector<std::int32_t>>& seqs,
                   const std::vector<std::vector<float>>& want, std::mt19937& rng, int threads) {
  ThreadPool pool(threads);
  std::vector<std::unique_ptr<SequenceState>> states;
  std::vector<std::vector<float>> got(seqs.size());
  std::vector<std::size_t> at(seqs.size(), 0);
  for (std::size_t s = 0; s < seqs.size(); ++s) states.push_back(m.new_sequence());
  for (bool active = true; active;) {
    std::vector<SeqChunk> batch;
    std::vector<std::size_t> who;
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      const std::size_t left = seqs[s].size() - at[s];
      if (left == 0 || rng() % 4 == 0) continue;  // sometimes sit a step out
      std::size_t n = rng() % 2 ? 1 : std::uniform_int_distribution<std::size_t>(1, left)(rng);
      batch.push_back({.seq = states[s].get(),
                       .tokens = std::span(seqs[s]).subspan(at[s], n),
                       .logits = LogitsWanted::kAll});
      who.push_back(s);
      at[s] += n;
    }
    if (!batch.empty()) {
      auto r = m.forward(pool, batch);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::int64_t row = 0;
      for (std::size_t b = 0; b < batch.size(); ++b) {
        const auto n = static_cast<std::int64_t>(batch[b].tokens.size());
        got[who[b]].insert(got[who[b]].end(), r->data + row * r->vocab_size,
                           r->data + (row + n) * r->vocab_size);
        row += n;
      }
    }
    active = false;
    for (std::size_t s = 0; s < seqs.size(); ++s) active |= at[s] < seqs[s].size();
  }
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    expect_same_bytes(
        want[s], got[s], m.vocab_size(),
        "batched sequence " + std::to_string(s) + ", threads " + std::to_string(threads));
  }
}

// (family, bits quantized on load: 0 = the bf16 weights as stored).
class Invariance : public ::testing::TestWithParam<std::tuple<modelgen::Family, int>> {};

void check_invariance(modelgen::Family family, int bits, const std::string& preset) {
  TempDir tmp(std::string("inv_") + modelgen::family_name(family) + std::to_string(bits) + preset);
  std::string dir = make_checkpoint(tmp, "m", family, modelgen::DType::kBF16, 11, 1, preset);
  auto loaded = Model::load(dir, {.max_batch_tokens = 3 * kSeqLen,
                                  .max_logit_rows = 3 * kSeqLen,
                                  .quantize_bits = bits,
                                  .quantize_group_size = 32});
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  Model& m = **loaded;
  int n_isas = 0;
  for (auto isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx2Vnni,
                   kernels::Isa::kAvx512, kernels::Isa::kAmx}) {
    if (!kernels::isa_supported(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    ASSERT_TRUE(kernels::select_isa(isa).is_ok());
    ++n_isas;
    std::mt19937 rng(1234);
    std::vector<std::vector<std::int32_t>> seqs;
    std::vector<std::vector<float>> want;
    for (int s = 0; s < 3; ++s) {
      seqs.push_back(random_tokens(rng, m.vocab_size(), kSeqLen - 7 * s));
      want.push_back(one_prefill(m, seqs.back()));
    }
    for (int threads : {1, 3}) check_random_chunks(m, seqs[0], want[0], rng, threads);
    for (std::size_t k : {std::size_t{1}, std::size_t{17}, std::size_t{70}, seqs[1].size() - 1}) {
      check_snapshot_then_decode(m, seqs[1], want[1], k);
    }
    for (int threads : {1, 3}) check_batched(m, seqs, want, rng, threads);
  }
  ASSERT_TRUE(kernels::select_isa(kernels::Isa::kAuto).is_ok());
  EXPECT_GE(n_isas, 1);
}

TEST_P(Invariance, LogitsAreBitIdenticalAcrossSplitsBatchesThreadsAndSnapshots) {
  const auto [family, bits] = GetParam();
  check_invariance(family, bits, "tiny");
}

// Nemotron-H's MoE blocks (tiny-moe: grouped routing, ReLU² experts, the shared expert), as
// stored and quantized on load.
TEST(InvarianceNemotronH, MoePresetIsBitIdenticalAcrossSplitsBatchesThreadsAndSnapshots) {
  for (int bits : {0, 4, 8}) {
    SCOPED_TRACE(bits);
    check_invariance(modelgen::Family::kNemotronH, bits, "tiny-moe");
  }
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, Invariance,
                         ::testing::Combine(::testing::ValuesIn(testing::kAllFamilies),
                                            ::testing::Values(0, 4, 8)),
                         [](const auto& p) {
                           const int bits = std::get<1>(p.param);
                           return std::string(modelgen::family_name(std::get<0>(p.param))) +
                                  (bits == 0 ? "_bf16" : "_q" + std::to_string(bits));
                         });

}  // namespace
}  // namespace recur::model
