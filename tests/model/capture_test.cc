// Interior captures (SequenceState::request_capture): the snapshot recorded inside a forward's
// chunk must equal, byte for byte, the snapshot of a forward that stopped there, and capturing
// must not change the chunk's own result or any other sequence's in the batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/model.h"
#include "test_util.h"

namespace recur::model {
namespace {

using testing::make_checkpoint;
using testing::TempDir;

constexpr std::int64_t kPrefix = 30;  // past Gemma tiny's 16-token window: its ring has wrapped
constexpr std::int64_t kEnd = 70;
constexpr std::int64_t kCaptures[] = {45, 60};

std::vector<std::int32_t> tokens_of(std::int64_t n, std::int64_t vocab, int salt) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    t[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7 + 3 + salt) % vocab);
  }
  return t;
}

// Payloads are megabytes: name the first differing byte instead of printing them.
::testing::AssertionResult same_bytes(const std::vector<std::uint8_t>& a,
                                      const std::vector<std::uint8_t>& b) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return ::testing::AssertionFailure() << "first difference at byte " << i;
  }
  return ::testing::AssertionSuccess();
}

struct Step {
  SequenceState* seq;
  std::span<const std::int32_t> tokens;
};

// Forwards the chunks as one batch; returns each chunk's last logit row.
std::vector<std::vector<float>> forward(Model& m, std::initializer_list<Step> steps) {
  ThreadPool pool(2);
  std::vector<SeqChunk> batch;
  for (const Step& s : steps) batch.push_back({.seq = s.seq, .tokens = s.tokens});
  auto r = m.forward(pool, batch);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<std::vector<float>> out;
  if (!r.is_ok()) return out;
  for (std::int64_t i = 0; i < r->n_rows; ++i) out.emplace_back(r->row(i).begin(), r->row(i).end());
  return out;
}

std::span<const std::int32_t> range(const std::vector<std::int32_t>& t, std::int64_t from,
                                    std::int64_t to) {
  return std::span<const std::int32_t>(t).subspan(static_cast<std::size_t>(from),
                                                  static_cast<std::size_t>(to - from));
}

// Every family's tiny preset, and Nemotron-H's MoE blocks (tiny-moe).
struct CaptureCase {
  modelgen::Family family;
  std::string preset;
};
std::vector<CaptureCase> capture_cases() {
  std::vector<CaptureCase> out;
  for (modelgen::Family f : testing::kAllFamilies) out.push_back({f, "tiny"});
  out.push_back({modelgen::Family::kNemotronH, "tiny-moe"});
  return out;
}

class Capture : public ::testing::TestWithParam<CaptureCase> {
 protected:
  void SetUp() override {
    dir_ = make_checkpoint(tmp_, modelgen::family_name(GetParam().family), GetParam().family,
                           modelgen::DType::kBF16, 5, 1, GetParam().preset);
    auto m = Model::load(dir_, {.max_batch_tokens = 128, .max_logit_rows = 8});
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::move(*m);
    prompt_ = tokens_of(kEnd, model_->vocab_size(), 0);
    other_ = tokens_of(kEnd, model_->vocab_size(), 11);
  }
  TempDir tmp_{"capture"};
  std::string dir_;
  std::unique_ptr<Model> model_;
  std::vector<std::int32_t> prompt_, other_;
};

TEST_P(Capture, EqualsTheSnapshotOfAForwardThatStoppedThere) {
  Model& m = *model_;
  // Split: forwards that stop at each capture position.
  auto split = m.new_sequence();
  forward(m, {{split.get(), range(prompt_, 0, kPrefix)}});
  std::vector<std::shared_ptr<const Snapshot>> expected;
  std::int64_t at = kPrefix;
  for (std::int64_t c : kCaptures) {
    forward(m, {{split.get(), range(prompt_, at, c)}});
    expected.push_back(split->snapshot());
    at = c;
  }
  auto split_logits = forward(m, {{split.get(), range(prompt_, at, kEnd)}});
  auto split_end = split->snapshot();

  // Captured: one chunk past both positions, batched with another sequence that captures nothing.
  auto seq = m.new_sequence();
  auto other = m.new_sequence();
  auto other_solo = m.new_sequence();
  forward(m, {{seq.get(), range(prompt_, 0, kPrefix)}});
  for (std::int64_t c : kCaptures) ASSERT_TRUE(seq->request_capture(c).is_ok());
  auto logits =
      forward(m, {{other.get(), range(other_, 0, 40)}, {seq.get(), range(prompt_, kPrefix, kEnd)}});
  auto solo_logits = forward(m, {{other_solo.get(), range(other_, 0, 40)}});
  ASSERT_EQ(logits.size(), 2u);
  EXPECT_EQ(logits[1], split_logits[0]) << "capturing changed the chunk's logits";
  EXPECT_EQ(logits[0], solo_logits[0]) << "capturing changed another sequence's logits";
  EXPECT_TRUE(same_bytes(other->snapshot()->payload(), other_solo->snapshot()->payload()));
  EXPECT_TRUE(same_bytes(seq->snapshot()->payload(), split_end->payload()));
  for (std::size_t i = 0; i < std::size(kCaptures); ++i) {
    auto snap = seq->take_capture(kCaptures[i]);
    ASSERT_TRUE(snap.is_ok()) << snap.status().to_string();
    EXPECT_EQ((*snap)->n_tokens(), kCaptures[i]);
    EXPECT_TRUE(same_bytes((*snap)->payload(), expected[i]->payload()))
        << "capture at " << kCaptures[i];
  }
  EXPECT_EQ(seq->n_captures(), 0);

  // A restored capture continues exactly as the split sequence did.
  auto resumed = m.new_sequence();
  ASSERT_TRUE(resumed->restore(*expected.back()).is_ok());
  auto resumed_logits = forward(m, {{resumed.get(), range(prompt_, kCaptures[1], kEnd)}});
  EXPECT_EQ(resumed_logits[0], split_logits[0]);
}

TEST_P(Capture, BadRequestsAreErrors) {
  Model& m = *model_;
  auto seq = m.new_sequence();
  forward(m, {{seq.get(), range(prompt_, 0, 10)}});
  EXPECT_FALSE(seq->request_capture(10).is_ok()) << "a capture must lie past the state";
  EXPECT_FALSE(seq->take_capture(20).is_ok()) << "nothing was requested at 20";
  ASSERT_TRUE(seq->request_capture(25).is_ok());
  EXPECT_FALSE(seq->take_capture(25).is_ok()) << "no forward has passed 25 yet";
  ASSERT_TRUE(seq->request_capture(25).is_ok());
  // The chunk must reach past the capture.
  ThreadPool pool(1);
  SeqChunk short_chunk{.seq = seq.get(), .tokens = range(prompt_, 10, 20)};
  EXPECT_FALSE(m.forward(pool, {&short_chunk, 1}).is_ok());
  EXPECT_EQ(seq->n_tokens(), 10) << "a refused forward leaves the state as it was";
}

INSTANTIATE_TEST_SUITE_P(Families, Capture, ::testing::ValuesIn(capture_cases()),
                         [](const auto& p) {
                           std::string name = modelgen::family_name(p.param.family);
                           if (p.param.preset != "tiny") name += "_" + p.param.preset;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(CaptureLimits, RingModelsRefuseACaptureTheRingWouldOverwrite) {
  TempDir tmp("capture_ring");
  auto dir = make_checkpoint(tmp, "gemma3", modelgen::Family::kGemma3, modelgen::DType::kBF16, 5);
  auto m = Model::load(dir, {.max_batch_tokens = 128, .max_logit_rows = 8});
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  auto seq = (*m)->new_sequence();
  const std::int64_t limit = seq->capture_tail_limit();
  ASSERT_EQ(limit, kRingPieceTokens - 1);
  auto toks = tokens_of(limit + 10, (*m)->vocab_size(), 0);
  ASSERT_TRUE(seq->request_capture(5).is_ok());
  ThreadPool pool(1);
  SeqChunk c{.seq = seq.get(), .tokens = toks};
  auto r = (*m)->forward(pool, {&c, 1});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("at most"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace recur::model
