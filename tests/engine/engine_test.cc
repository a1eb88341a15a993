// The engine thread over a real generated checkpoint: cache on/off and batched/solo give the same
// tokens, cancellation frees the sequence, bad submissions are refused with named limits,
// completion snapshots serve the next turn and boundary snapshots a request that shares only the
// history (an edited last message). Also run under ThreadSanitizer.
#include "engine/engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "modelgen/generator.h"

namespace recur::engine {
namespace {

class EngineTest : public testing::TestWithParam<modelgen::Family> {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("recur_engine_test_" + std::to_string(::getpid()) + "_" +
             modelgen::family_name(GetParam())))
               .string();
    modelgen::GenSpec spec;
    spec.family = GetParam();
    ASSERT_TRUE(modelgen::write_checkpoint(spec, dir_).is_ok());
    auto m = model::Model::load(dir_, {.max_batch_tokens = 64, .max_logit_rows = 4});
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = tokenizer::Tokenizer::load_dir(dir_);
    ASSERT_TRUE(t.is_ok());
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<cache::PromptCache> make_cache(bool boundary = true) {
    const auto& layout = model_->state_layout();
    cache::CacheSettings s;
    s.min_prefix_tokens = 4;
    s.block_tokens = 1;
    s.boundary = boundary;
    auto b = cache::choose_budgets(
        {.snapshot_bytes_at = [&](std::int64_t n) { return layout.snapshot_bytes(n); },
         .truncatable = layout.truncatable(),
         .context_tokens = 512},
        s, std::int64_t{1} << 30);
    return std::make_unique<cache::PromptCache>(b, clock_);
  }

  GenerationRequest request(std::vector<TokenId> prompt, std::uint64_t seed, int max_tokens = 12) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.sampling = {.temperature = 0.9f, .top_p = 0.95f, .seed = seed, .logprobs = true};
    r.cache_key.session = cache::SessionKey::from_request("conv", "");
    r.history_boundary = static_cast<std::int64_t>(r.prompt.size()) - 3;
    return r;
  }

  // Runs a request to the end: the sampled ids and the done event.
  static std::pair<std::vector<TokenId>, Event> drain(RequestChannel& ch) {
    std::vector<TokenId> ids;
    for (;;) {
      auto e = ch.pop(std::chrono::milliseconds(10000));
      EXPECT_TRUE(e.has_value()) << "no event in 10 s";
      if (!e) return {ids, Event{}};
      for (const auto& s : e->samples) ids.push_back(s.id);
      if (e->done) return {ids, *e};
    }
  }

  std::vector<TokenId> prompt_of(const std::string& text) {
    return tok_->encode(text, {.parse_special = true});
  }

  std::string dir_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  ManualClock clock_;
};

TEST_P(EngineTest, CacheOnAndOffGiveTheSameTokensOverTurns) {
  ThreadPool pool(2);
  auto cache = make_cache();
  Engine with(EngineOptions{.parallel = 2, .prefill_chunk = 7, .ctx_size = 512}, *model_, *tok_,
              cache.get(), pool);
  with.start();
  ThreadPool pool2(1);
  // A model is driven by one engine thread at a time (it owns its scratch): a second instance.
  auto other = model::Model::load(dir_, {.max_batch_tokens = 64, .max_logit_rows = 4});
  ASSERT_TRUE(other.is_ok());
  Engine without(EngineOptions{.parallel = 2, .prefill_chunk = 64, .ctx_size = 512}, **other, *tok_,
                 nullptr, pool2);
  without.start();
  std::vector<TokenId> prompt =
      prompt_of("<|im_start|>user\nHello there, how are things?<|im_end|>\n");
  std::int64_t cached_total = 0;
  for (int turn = 0; turn < 3; ++turn) {
    auto a = with.submit(request(prompt, 7 + turn));
    auto b = without.submit(request(prompt, 7 + turn));
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    auto [ids_a, done_a] = drain(**a);
    auto [ids_b, done_b] = drain(**b);
    ASSERT_EQ(ids_a, ids_b) << "turn " << turn;
    EXPECT_EQ(done_a.usage.completion_tokens, done_b.usage.completion_tokens);
    EXPECT_EQ(done_b.usage.cached_tokens, 0);
    if (turn > 0) {
      EXPECT_GT(done_a.usage.cached_tokens, 0)
          << "turn " << turn << ": " << done_a.trace.to_header();
    }
    cached_total += done_a.usage.cached_tokens;
    // The next turn extends this one: prompt + reply + a new user message.
    prompt.insert(prompt.end(), ids_a.begin(), ids_a.end());
    auto more = prompt_of("<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n");
    prompt.insert(prompt.end(), more.begin(), more.end());
  }
  EXPECT_GT(cached_total, 0);
  auto stats = cache->stats();
  auto& store = model_->state_layout().truncatable() ? stats.prefix : stats.snapshot;
  EXPECT_GT(store.inserts, 0);
  EXPECT_GT(store.hits, 0);
}

// A state whose snapshot was just stored is kept as it is: the warm-up that continues the turn and
// the next turn each take it instead of copying the entry into another state. Once the entry is
// gone (here: the cache is cleared) the kept state must not be used. Tokens equal an engine
// without cache throughout.
TEST_P(EngineTest, KeptStatesServeTheNextTurnWithoutACopy) {
  ThreadPool pool(2);
  auto cache = make_cache();
  Engine with(EngineOptions{.parallel = 2, .prefill_chunk = 16, .ctx_size = 512}, *model_, *tok_,
              cache.get(), pool);
  with.start();
  ThreadPool pool2(1);
  auto other = model::Model::load(dir_, {.max_batch_tokens = 64, .max_logit_rows = 4});
  ASSERT_TRUE(other.is_ok());
  Engine without(EngineOptions{.parallel = 2, .ctx_size = 512}, **other, *tok_, nullptr, pool2);
  without.start();
  std::vector<TokenId> prompt = prompt_of(
      "<|im_start|>user\nHello there, how are things?<|im_end|>\n<|im_start|>assistant\n");
  for (int turn = 0; turn < 3; ++turn) {
    SCOPED_TRACE("turn " + std::to_string(turn));
    if (turn == 2) cache->clear();
    const EngineStats before = with.stats();
    auto a = with.submit(request(prompt, 11 + turn));
    auto b = without.submit(request(prompt, 11 + turn));
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    auto [ids_a, done_a] = drain(**a);
    auto [ids_b, done_b] = drain(**b);
    ASSERT_EQ(ids_a, ids_b);
    const EngineStats after = with.stats();
    if (turn == 1) {
      // The warm-up took the completion's state, the turn the warm-up's.
      EXPECT_EQ(done_a.trace.origin, "warmup") << done_a.trace.to_header();
      EXPECT_EQ(after.restores_in_place - before.restores_in_place, 1);
      EXPECT_EQ(after.restores_copied, 0);
    }
    if (turn == 2) {
      EXPECT_FALSE(done_a.trace.hit) << done_a.trace.to_header();
      EXPECT_EQ(after.restores_in_place, before.restores_in_place);
    }
    // The next turn: the reply as the template closes it, then a new user message. The warm-up
    // computes the closed reply from the completion snapshot while nothing else runs.
    prompt.insert(prompt.end(), ids_a.begin(), ids_a.end());
    auto close = prompt_of("<|im_end|>\n");
    prompt.insert(prompt.end(), close.begin(), close.end());
    const std::int64_t done_before = with.stats().warmups_done;
    with.continue_turn(done_a.turn_end, prompt);
    for (int i = 0; i < 1000 && with.stats().warmups_done == done_before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(with.stats().warmups_done, done_before + 1);
    auto more = prompt_of("<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>assistant\n");
    prompt.insert(prompt.end(), more.begin(), more.end());
  }
  // Every warm-up (from its turn's completion) and turn 1's restore; none copied a snapshot.
  EXPECT_EQ(with.stats().restores_in_place, 4);
  EXPECT_EQ(with.stats().restores_copied, 0);
}

// A request whose last message differs from the previous request's (an edited or regenerated
// turn) shares only the rendered history with it. Hybrid and recurrent models can resume there
// only from the boundary snapshot taken at history_boundary; dense models from the prefix store.
// Either way exactly the history is reused and the tokens equal those of an engine without cache.
TEST_P(EngineTest, BoundarySnapshotServesTheNextRequestWithTheSameHistory) {
  const bool dense = model_->state_layout().truncatable();
  for (bool boundary : {true, false}) {
    SCOPED_TRACE(boundary ? "boundary snapshots on" : "boundary snapshots off");
    ThreadPool pool(2);
    auto cache = make_cache(boundary);
    Engine with(EngineOptions{.parallel = 1, .prefill_chunk = 5, .ctx_size = 512}, *model_, *tok_,
                cache.get(), pool);
    with.start();
    ThreadPool pool2(1);
    auto other = model::Model::load(dir_, {.max_batch_tokens = 64, .max_logit_rows = 4});
    ASSERT_TRUE(other.is_ok());
    Engine without(EngineOptions{.parallel = 1, .ctx_size = 512}, **other, *tok_, nullptr, pool2);
    without.start();

    const std::vector<TokenId> history = prompt_of(
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nName a "
        "colour.<|im_end|>\n");
    auto turn = [&](const std::string& last) {
      std::vector<TokenId> p = history;
      auto tail = prompt_of("<|im_start|>user\n" + last + "<|im_end|>\n");
      p.insert(p.end(), tail.begin(), tail.end());
      GenerationRequest r = request(p, 5);
      r.history_boundary = static_cast<std::int64_t>(history.size());
      return r;
    };
    auto first = with.submit(turn("Red?"));
    ASSERT_TRUE(first.is_ok());
    auto [ids1, done1] = drain(**first);
    EXPECT_EQ(done1.usage.cached_tokens, 0);

    // Same history and user-turn header, a different last message.
    GenerationRequest edited = turn("Blue?");
    const std::vector<TokenId> before = turn("Red?").prompt;
    const auto common = static_cast<std::int64_t>(
        std::mismatch(before.begin(), before.end(), edited.prompt.begin()).first - before.begin());
    auto a = with.submit(edited);
    auto b = without.submit(edited);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    auto [ids_a, done_a] = drain(**a);
    auto [ids_b, done_b] = drain(**b);
    EXPECT_EQ(ids_a, ids_b);
    const auto n_history = static_cast<std::int64_t>(history.size());
    ASSERT_GT(common, n_history) << "the user-turn header is shared too";
    if (dense || boundary) {
      // Only the prefix store can use the shared user-turn header after the history: a snapshot
      // resumes exactly where it was taken, at the history boundary.
      EXPECT_EQ(done_a.usage.cached_tokens, dense ? common : n_history) << done_a.trace.to_header();
      EXPECT_EQ(done_a.trace.origin, dense ? "completion" : "boundary") << done_a.trace.to_header();
    } else {
      EXPECT_EQ(done_a.usage.cached_tokens, 0) << done_a.trace.to_header();
    }
  }
}

// The boundary snapshot of a prompt whose uncached part fits one prefill piece is captured inside
// that piece: one forward, not one up to the boundary and a second for the generation prompt. The
// stored
// boundary then serves a request that shares only the history, exactly.
TEST_P(EngineTest, BoundarySnapshotIsCapturedInsideOneForward) {
  if (model_->state_layout().truncatable()) GTEST_SKIP() << "dense models take no boundary";
  ThreadPool pool(2);
  auto cache = make_cache();
  Engine engine(EngineOptions{.parallel = 1, .ctx_size = 512}, *model_, *tok_, cache.get(), pool);
  engine.start();
  const std::vector<TokenId> history = prompt_of(
      "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nName a colour.<|im_end|>\n");
  auto turn = [&](const std::string& gen) {
    std::vector<TokenId> p = history;
    auto tail = prompt_of(gen);
    p.insert(p.end(), tail.begin(), tail.end());
    GenerationRequest r = request(p, 9, 4);
    r.history_boundary = static_cast<std::int64_t>(history.size());
    return r;
  };
  auto first = engine.submit(turn("<|im_start|>assistant\n"));
  ASSERT_TRUE(first.is_ok());
  auto [ids1, done1] = drain(**first);
  const auto n_prompt = static_cast<std::int64_t>(turn("<|im_start|>assistant\n").prompt.size());
  EXPECT_EQ(done1.timing.prefill_tokens, n_prompt);
  // Pieces of at most 64 tokens (max_batch_tokens); the boundary falls inside the last one.
  ASSERT_NE(static_cast<std::int64_t>(history.size()) % 64, 0);
  EXPECT_EQ(done1.timing.prefill_steps, (n_prompt + 63) / 64);
  // Another generation prompt after the same history resumes at the boundary.
  auto second = engine.submit(turn("<|im_start|>assistant\n<think>\n"));
  ASSERT_TRUE(second.is_ok());
  auto [ids2, done2] = drain(**second);
  EXPECT_EQ(done2.usage.cached_tokens, static_cast<std::int64_t>(history.size()))
      << done2.trace.to_header();
  EXPECT_EQ(done2.trace.origin, "boundary");
  EXPECT_EQ(done2.timing.prefill_steps, 1);
}

// A new conversation whose system prompt another conversation of the same tenant already computed
// resumes at the end of it (hybrid and recurrent models through the shared session; dense ones
// through the prefix store), with the same tokens as without a cache; another tenant does not.
TEST_P(EngineTest, SharedSystemPromptServesTheTenantsNewConversations) {
  ThreadPool pool(2);
  auto cache = make_cache();
  Engine with(EngineOptions{.parallel = 2, .ctx_size = 512}, *model_, *tok_, cache.get(), pool);
  with.start();
  ThreadPool pool2(1);
  auto other = model::Model::load(dir_, {.max_batch_tokens = 64, .max_logit_rows = 4});
  ASSERT_TRUE(other.is_ok());
  Engine without(EngineOptions{.parallel = 1, .ctx_size = 512}, **other, *tok_, nullptr, pool2);
  without.start();
  const std::vector<TokenId> system =
      prompt_of("<|im_start|>system\nYou answer in haiku, always, about anything.<|im_end|>\n");
  auto first_turn = [&](const std::string& session, const std::string& user,
                        const std::string& tenant) {
    std::vector<TokenId> p = system;
    auto tail = prompt_of("<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n");
    p.insert(p.end(), tail.begin(), tail.end());
    GenerationRequest r = request(p, 3, 4);
    r.cache_key.session = cache::SessionKey::from_request(session, "");
    r.cache_key.tenant.api_key_identity = tenant;
    r.shared_boundary = static_cast<std::int64_t>(system.size());
    return r;
  };
  auto a = with.submit(first_turn("a", "Rain?", "t1"));
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(drain(**a).second.usage.cached_tokens, 0);
  for (const auto& [session, tenant] : {std::pair{"b", "t1"}, std::pair{"c", "t2"}}) {
    SCOPED_TRACE(std::string("session ") + session + " of tenant " + tenant);
    GenerationRequest r = first_turn(session, "Snow, and the quiet after it?", tenant);
    auto got = with.submit(r);
    auto want = without.submit(r);
    ASSERT_TRUE(got.is_ok() && want.is_ok());
    auto [ids, done] = drain(**got);
    EXPECT_EQ(ids, drain(**want).first);
    if (std::string(tenant) == "t2") {
      EXPECT_EQ(done.usage.cached_tokens, 0) << done.trace.to_header();
    } else if (model_->state_layout().truncatable()) {
      // The prefix store shares every common prefix, the user-turn header included.
      EXPECT_GE(done.usage.cached_tokens, static_cast<std::int64_t>(system.size()));
    } else {
      EXPECT_EQ(done.usage.cached_tokens, static_cast<std::int64_t>(system.size()))
          << done.trace.to_header();
      EXPECT_EQ(done.trace.origin, "shared");
    }
  }
  if (!model_->state_layout().truncatable()) {
    EXPECT_EQ(cache->stats().snapshot.hits_shared, 1);
  }
}

// New conversations that arrive together with the same new system prompt compute it once: the
// first computes it, the others of its tenant wait until it is stored (dense models: until the
// first has passed it) and restore it (dense: copy its K/V from the first's live state), and
// another tenant's computes its own. The bytes are those of each alone without a cache.
TEST_P(EngineTest, ConversationsStartingTogetherComputeTheirSystemPromptOnce) {
  const bool dense = model_->state_layout().truncatable();
  ThreadPool pool(2);
  auto cache = make_cache();
  Engine with(EngineOptions{.parallel = 4, .prefill_chunk = 8, .ctx_size = 512}, *model_, *tok_,
              cache.get(), pool);
  ThreadPool pool2(1);
  auto other = model::Model::load(dir_, {.max_batch_tokens = 64, .max_logit_rows = 4});
  ASSERT_TRUE(other.is_ok());
  Engine without(EngineOptions{.parallel = 1, .ctx_size = 512}, **other, *tok_, nullptr, pool2);
  without.start();
  const std::vector<TokenId> system = prompt_of(
      "<|im_start|>system\nYou answer in haiku, always, about anything at all.<|im_end|>\n");
  const auto s = static_cast<std::int64_t>(system.size());
  struct Conv {
    std::string session, tenant, user;
  };
  const std::vector<Conv> convs = {{"a", "t1", "Rain?"},
                                   {"b", "t1", "Snow, and the quiet after it?"},
                                   {"c", "t2", "Fog?"},
                                   {"d", "t1", "Wind in the pines?"}};
  std::vector<GenerationRequest> reqs;
  std::vector<std::shared_ptr<RequestChannel>> got;
  std::int64_t prompt_total = 0;
  for (const Conv& c : convs) {
    std::vector<TokenId> p = system;
    auto tail = prompt_of("<|im_start|>user\n" + c.user + "<|im_end|>\n<|im_start|>assistant\n");
    p.insert(p.end(), tail.begin(), tail.end());
    GenerationRequest r = request(p, 3, 4);
    r.cache_key.session = cache::SessionKey::from_request(c.session, "");
    r.cache_key.tenant.api_key_identity = c.tenant;
    r.shared_boundary = s;
    prompt_total += static_cast<std::int64_t>(p.size());
    reqs.push_back(r);
    auto ch = with.submit(r);  // all queued before the engine starts: they arrive together
    ASSERT_TRUE(ch.is_ok());
    got.push_back(*ch);
  }
  with.start();
  for (std::size_t i = 0; i < convs.size(); ++i) {
    SCOPED_TRACE("session " + convs[i].session);
    auto [ids, done] = drain(*got[i]);
    auto want = without.submit(reqs[i]);
    ASSERT_TRUE(want.is_ok());
    EXPECT_EQ(ids, drain(**want).first);
    const bool follower = convs[i].tenant == "t1" && convs[i].session != "a";
    EXPECT_EQ(done.usage.cached_tokens, follower ? s : 0) << done.trace.to_header();
    if (follower) {
      EXPECT_EQ(done.trace.origin, "shared");
      EXPECT_EQ(done.trace.tier, dense ? "peer" : "ram");
    }
  }
  EXPECT_EQ(with.stats().shared_waits, 2);
  EXPECT_EQ(with.stats().restores_peer, dense ? 2 : 0);
  EXPECT_EQ(with.stats().prefill_tokens, prompt_total - 2 * s);
}

// Dense models keep no entry at the shared point: a conversation admitted while another of its
// tenant, past the same system prompt, is still decoding (its completion not stored yet) copies
// the system prompt's K/V from that one's live state. The bytes are those of it alone.
TEST_P(EngineTest, DenseConversationCopiesASystemPromptFromOneStillDecoding) {
  if (!model_->state_layout().truncatable()) GTEST_SKIP() << "the snapshot store's shared entry";
  ThreadPool pool(2);
  auto cache = make_cache();
  Engine with(EngineOptions{.parallel = 2, .ctx_size = 512}, *model_, *tok_, cache.get(), pool);
  with.start();
  ThreadPool pool2(1);
  auto other = model::Model::load(dir_, {.max_batch_tokens = 64, .max_logit_rows = 4});
  ASSERT_TRUE(other.is_ok());
  Engine without(EngineOptions{.parallel = 1, .ctx_size = 512}, **other, *tok_, nullptr, pool2);
  without.start();
  const std::vector<TokenId> system =
      prompt_of("<|im_start|>system\nYou answer like a ship's log, terse and dated.<|im_end|>\n");
  const auto s = static_cast<std::int64_t>(system.size());
  auto conversation = [&](const std::string& session, const std::string& user, int max_tokens) {
    std::vector<TokenId> p = system;
    auto tail = prompt_of("<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n");
    p.insert(p.end(), tail.begin(), tail.end());
    GenerationRequest r = request(p, 5, max_tokens);
    r.cache_key.session = cache::SessionKey::from_request(session, "");
    r.shared_boundary = s;
    return r;
  };
  const GenerationRequest first = conversation("a", "Log the storm.", 200);
  auto a = with.submit(first);
  ASSERT_TRUE(a.is_ok());
  // Its first token: the whole prompt is in its state and it decodes for a while yet.
  std::vector<TokenId> ids_a;
  for (auto e = (*a)->pop(std::chrono::milliseconds(10000)); e; e = std::nullopt) {
    for (const auto& x : e->samples) ids_a.push_back(x.id);
    ASSERT_FALSE(e->done) << "the first conversation ended before the second arrived";
  }
  ASSERT_FALSE(ids_a.empty());
  const GenerationRequest second = conversation("b", "And the calm after?", 6);
  auto b = with.submit(second);
  ASSERT_TRUE(b.is_ok());
  auto [ids_b, done_b] = drain(**b);
  EXPECT_EQ(done_b.usage.cached_tokens, s) << done_b.trace.to_header();
  EXPECT_EQ(done_b.trace.tier, "peer");
  EXPECT_EQ(with.stats().restores_peer, 1);
  auto want = without.submit(second);
  ASSERT_TRUE(want.is_ok());
  EXPECT_EQ(ids_b, drain(**want).first);
  auto [rest_a, done_a] = drain(**a);
  ids_a.insert(ids_a.end(), rest_a.begin(), rest_a.end());
  auto want_a = without.submit(first);
  ASSERT_TRUE(want_a.is_ok());
  EXPECT_EQ(ids_a, drain(**want_a).first);
}

// Shortest prompt first, and short steps while anything decodes: a follow-up turn's few tokens
// are computed in the first step after it arrives, ahead of another conversation's long prompt,
// which meanwhile advances at most --step-tokens per step; the bytes are those of each alone.
TEST_P(EngineTest, ShortPromptsGoAheadOfLongOnes) {
  ThreadPool pool(2);
  Engine engine(
      EngineOptions{.parallel = 2, .prefill_chunk = 64, .step_tokens = 8, .ctx_size = 512}, *model_,
      *tok_, nullptr, pool);
  std::vector<TokenId> long_prompt;
  while (long_prompt.size() < 120) {
    auto more = prompt_of("<|im_start|>user\nTell me a long story about the sea.<|im_end|>\n");
    long_prompt.insert(long_prompt.end(), more.begin(), more.end());
  }
  // A few tokens whatever the tokenizer (Gemma's and Llama's spell the chat markers out).
  std::vector<TokenId> short_prompt = prompt_of("Hello, how are you today?");
  short_prompt.resize(std::min<std::size_t>(short_prompt.size(), 6));
  auto lg = engine.submit(request(long_prompt, 1, 4));
  auto sh = engine.submit(request(short_prompt, 2, 4));
  ASSERT_TRUE(lg.is_ok() && sh.is_ok());
  engine.start();  // both are admitted by the first step
  auto [ids_short, done_short] = drain(**sh);
  auto [ids_long, done_long] = drain(**lg);
  EXPECT_EQ(done_short.timing.prefill_steps, 1);
  // Submit to first token (the done event's timing; ttft_s rides on the first token's event).
  auto first_token_s = [](const Event& e) {
    return e.timing.queue_s + e.timing.restore_s + e.timing.prefill_s;
  };
  EXPECT_LT(first_token_s(done_short), first_token_s(done_long));
  // 8 tokens per step while the short one decodes, then pieces of 64.
  EXPECT_GE(done_long.timing.prefill_steps, 4);
  ThreadPool pool2(1);
  Engine solo(EngineOptions{.parallel = 1, .ctx_size = 512}, *model_, *tok_, nullptr, pool2);
  solo.start();
  auto a = solo.submit(request(long_prompt, 1, 4));
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(drain(**a).first, ids_long);
  auto b = solo.submit(request(short_prompt, 2, 4));
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(drain(**b).first, ids_short);
}

TEST_P(EngineTest, BatchedEqualsSoloFromManyThreads) {
  ThreadPool pool(2);
  Engine engine(EngineOptions{.parallel = 3, .prefill_chunk = 5, .ctx_size = 512}, *model_, *tok_,
                nullptr, pool);
  engine.start();
  const std::vector<std::string> texts = {"alpha beta gamma", "one two three four five",
                                          "the quick brown fox", "x", "hello, world"};
  std::vector<std::vector<TokenId>> solo;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ch = engine.submit(request(prompt_of(texts[i]), 100 + i));
    ASSERT_TRUE(ch.is_ok());
    solo.push_back(drain(**ch).first);
  }
  std::vector<std::vector<TokenId>> together(texts.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < texts.size(); ++i) {
    clients.emplace_back([&, i] {
      auto ch = engine.submit(request(prompt_of(texts[i]), 100 + i));
      ASSERT_TRUE(ch.is_ok());
      together[i] = drain(**ch).first;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(together, solo);
}

// The server lines logprobs up with the content by each token's text: the samples' texts must
// add up to the events' text, whether the turn runs to max_tokens, ends on a stop string (the
// tokens held back for it release nothing) or on an end token. The bytes behind the samples'
// texts (each sample's bytes, or its text where it has none) are the tokens' raw bytes: random
// weights draw stray byte tokens (Gemma's byte fallback, byte-level BPE's partial characters),
// whose text is U+FFFD and whose logprob `bytes` are the raw byte (issue 47).
TEST_P(EngineTest, EachSampleCarriesItsShareOfTheText) {
  ThreadPool pool(1);
  Engine engine(EngineOptions{.parallel = 1, .ctx_size = 512}, *model_, *tok_, nullptr, pool);
  engine.start();
  int with_bytes = 0;  // samples whose bytes are not their text
  auto run = [&](GenerationRequest req) {
    auto ch = engine.submit(std::move(req));
    EXPECT_TRUE(ch.is_ok());
    std::string text, sample_text, sample_bytes;
    std::vector<TokenId> ids;
    for (;;) {
      auto e = (*ch)->pop(std::chrono::milliseconds(10000));
      if (!e) {
        ADD_FAILURE() << "no event in 10 s";
        break;
      }
      text += e->text;
      for (const auto& s : e->samples) {
        sample_text += s.text;
        sample_bytes += s.bytes.empty() ? s.text : s.bytes;
        if (!s.bytes.empty()) {
          EXPECT_NE(s.bytes, s.text);
          ++with_bytes;
        }
        ids.push_back(s.id);
      }
      if (e->done) break;
    }
    EXPECT_EQ(sample_text, text);
    return std::tuple{text, ids, sample_bytes};
  };
  auto [text, ids, bytes] = run(request(prompt_of("tell me a story"), 3, 24));
  ASSERT_EQ(ids.size(), 24u);
  EXPECT_EQ(bytes, tok_->decode_raw(ids, /*skip_special=*/true));
  for (std::uint64_t seed : {5, 6, 7}) {
    auto [t2, ids2, bytes2] = run(request(prompt_of("say something odd"), seed, 64));
    EXPECT_EQ(bytes2, tok_->decode_raw(ids2, /*skip_special=*/true));
  }
  // Gemma 3's tiny vocabulary is mostly byte tokens: random weights draw stray ones.
  if (GetParam() == modelgen::Family::kGemma3) {
    EXPECT_GT(with_bytes, 0);
  }
  GenerationRequest stopped = request(prompt_of("tell me a story"), 3, 24);
  if (text.size() > 8) stopped.stop_strings = {text.substr(text.size() / 2, 3)};
  auto [stopped_text, stopped_ids, stopped_bytes] = run(std::move(stopped));
  EXPECT_LE(stopped_text.size(), text.size());
  GenerationRequest ended = request(prompt_of("tell me a story"), 3, 24);
  ended.stop_token_ids = {ids[10]};
  ended.stop_strings = {"\x01\x02"};  // never seen: nothing but incomplete text is held back
  run(std::move(ended));
}

TEST_P(EngineTest, CancelledRequestIsFreed) {
  ThreadPool pool(1);
  Engine engine(EngineOptions{.parallel = 1, .ctx_size = 512}, *model_, *tok_, nullptr, pool);
  engine.start();
  auto ch = engine.submit(request(prompt_of("tell me a long story"), 1, 400));
  ASSERT_TRUE(ch.is_ok());
  auto first = (*ch)->pop(std::chrono::milliseconds(10000));
  ASSERT_TRUE(first.has_value());
  (*ch)->cancel();
  auto [ids, done] = drain(**ch);
  EXPECT_EQ(done.finish, FinishReason::kCancelled);
  for (int i = 0; i < 500 && engine.stats().active != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(engine.stats().active, 0);
}

// A request cancelled while it waits for a slot gives its queue place back at the next step,
// while the running one goes on; it is never computed.
TEST_P(EngineTest, CancelledQueuedRequestLeavesTheQueueAtOnce) {
  ThreadPool pool(1);
  Engine engine(EngineOptions{.parallel = 1, .max_queue = 1, .ctx_size = 512}, *model_, *tok_,
                nullptr, pool);
  engine.start();
  auto running = engine.submit(request(prompt_of("tell me a long story"), 1, 400));
  ASSERT_TRUE(running.is_ok());
  ASSERT_TRUE((*running)->pop(std::chrono::milliseconds(10000)).has_value());  // it is decoding
  const std::int64_t prefill_before = engine.stats().prefill_tokens;
  auto waiting = engine.submit(request(prompt_of("and another one please"), 2, 4));
  ASSERT_TRUE(waiting.is_ok());
  EXPECT_EQ(engine.submit(request({1, 2, 3}, 3, 4)).status().code(),
            StatusCode::kResourceExhausted);
  (*waiting)->cancel();
  for (int i = 0; i < 2000 && engine.stats().queued != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EngineStats s = engine.stats();
  EXPECT_EQ(s.queued, 0);
  EXPECT_EQ(s.active, 1) << "the running request goes on";
  EXPECT_EQ(s.dropped_queued, 1);
  EXPECT_EQ(s.prefill_tokens, prefill_before) << "the cancelled request was never computed";
  auto next = engine.submit(request({1, 2, 3}, 3, 4));
  EXPECT_TRUE(next.is_ok()) << "the queue place is free again";
  (*running)->cancel();
  drain(**running);
  if (next.is_ok()) drain(**next);
}

// Regression: a request being admitted was briefly in neither count, so a draining server that
// polled the counts in that moment saw nothing to wait for and cancelled it. A watcher records
// every change of (queued, active) while requests pass one at a time: none may read (0, 0)
// between its queued and its running state. The step count tells that moment from a request that
// ran and finished between two of the watcher's reads (a watcher starved of CPU under a loaded
// ctest -j2 saw 13 changes in 300 requests, and that pattern, before the count was recorded).
TEST_P(EngineTest, AnAdmittedRequestIsAlwaysCounted) {
  if (GetParam() != modelgen::Family::kQwen3_5) GTEST_SKIP() << "engine bookkeeping: one family";
  ThreadPool pool(1);
  Engine engine(EngineOptions{.parallel = 2, .ctx_size = 512}, *model_, *tok_, nullptr, pool);
  engine.start();
  struct Seen {
    std::int64_t queued = 0, active = 0, steps = 0;
  };
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> n_seen{1};
  std::vector<Seen> seen{{}};
  std::thread watcher([&] {
    while (!stop.load()) {
      const EngineStats s = engine.stats();
      if (s.queued != seen.back().queued || s.active != seen.back().active) {
        seen.push_back({.queued = s.queued, .active = s.active, .steps = s.steps});
        n_seen.store(seen.size());
      }
    }
  });
  // At least 300 requests, more while the watcher has seen few of them (a starved watcher).
  for (int i = 0; i < 3000 && (i < 300 || n_seen.load() < 600); ++i) {
    auto ch = engine.submit(request({1, 2, 3}, static_cast<std::uint64_t>(i), 1));
    if (!ch.is_ok()) {  // not ASSERT: the watcher must be joined
      ADD_FAILURE() << ch.status().to_string();
      break;
    }
    drain(**ch);
    for (int spin = 0; spin < 10000 && engine.stats().active != 0; ++spin) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  stop.store(true);
  watcher.join();
  int uncounted = 0;
  for (std::size_t k = 1; k + 1 < seen.size(); ++k) {
    const bool was_queued = seen[k - 1].queued > 0;
    const bool neither = seen[k].queued == 0 && seen[k].active == 0;
    const bool no_step_between = seen[k].steps == seen[k - 1].steps;
    if (was_queued && neither && no_step_between && seen[k + 1].active > 0) ++uncounted;
  }
  EXPECT_EQ(uncounted, 0) << "of " << seen.size() << " observed changes";
  EXPECT_GT(seen.size(), 300u) << "the watcher saw the requests pass";
}

TEST_P(EngineTest, SubmissionsBeyondLimitsAreRefusedNamingThem) {
  ThreadPool pool(1);
  Engine engine(EngineOptions{.parallel = 1, .max_queue = 0, .ctx_size = 64}, *model_, *tok_,
                nullptr, pool);
  // Not started: nothing is admitted, so the queue fills deterministically.
  EXPECT_EQ(engine.submit(request({}, 1)).status().code(), StatusCode::kInvalidArgument);
  auto too_long = engine.submit(request(std::vector<TokenId>(64, 5), 1));
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find("--ctx-size"), std::string::npos);
  auto bad_id = engine.submit(request({1, 2, static_cast<TokenId>(model_->vocab_size())}, 1));
  EXPECT_EQ(bad_id.status().code(), StatusCode::kInvalidArgument);
  GenerationRequest bad_sampling = request({1, 2, 3}, 1);
  bad_sampling.sampling.top_p = 0;
  EXPECT_NE(engine.submit(bad_sampling).status().message().find("top_p"), std::string::npos);
  ASSERT_TRUE(engine.submit(request({1, 2, 3}, 1, 4)).is_ok());  // the one free slot
  auto full = engine.submit(request({1, 2, 3}, 1, 4));
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.status().message().find("--max-queue"), std::string::npos);
}

TEST_P(EngineTest, TheContextEndsATurnWhoseMaxTokensReachesPastIt) {
  // Agents ask for more output than the context leaves: admitted, it ends there (length).
  ThreadPool pool(1);
  Engine engine(EngineOptions{.parallel = 1, .max_queue = 1, .ctx_size = 64}, *model_, *tok_,
                nullptr, pool);
  engine.start();
  auto ch = engine.submit(request(std::vector<TokenId>(60, 5), 1, 1000));
  ASSERT_TRUE(ch.is_ok()) << ch.status().message();
  auto [ids, done] = drain(**ch);
  EXPECT_EQ(ids.size(), 4u) << "64 - 60 tokens are left in the context";
  EXPECT_EQ(done.finish, FinishReason::kLength);
  engine.stop();
}

INSTANTIATE_TEST_SUITE_P(Families, EngineTest,
                         testing::Values(modelgen::Family::kQwen3_5, modelgen::Family::kMamba2,
                                         modelgen::Family::kQwen3, modelgen::Family::kGemma3,
                                         modelgen::Family::kLlama, modelgen::Family::kGraniteHybrid,
                                         modelgen::Family::kLfm2, modelgen::Family::kNemotronH,
                                         modelgen::Family::kFalconH1, modelgen::Family::kQwen3_5Moe,
                                         modelgen::Family::kQwen3Next,
                                         modelgen::Family::kGraniteMoe, modelgen::Family::kLfm2Moe),
                         [](const auto& p) { return std::string(modelgen::family_name(p.param)); });

}  // namespace
}  // namespace recur::engine
