// Lookup and insert cost of the prompt-cache stores as the number of stored entries grows: a
// 32k-token prompt against 100 .. 10,000 entries. The radix tree should make the cost depend on
// the prompt, not on the entries. Figures: docs/prompt-cache.md.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cache/store.h"

namespace recur::cache {
namespace {

constexpr std::size_t kPromptTokens = 32768;
constexpr std::size_t kSystemTokens = 512;

class TinySnapshot final : public Snapshot {
 public:
  explicit TinySnapshot(std::int64_t n_tokens) : n_tokens_(n_tokens) {}
  std::size_t byte_size() const override { return 1; }
  std::int64_t n_tokens() const override { return n_tokens_; }
  bool truncatable() const override { return true; }

 private:
  std::int64_t n_tokens_;
};

std::vector<Token> random_tokens(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<Token> vocab(0, 151'000);
  std::vector<Token> t(n);
  for (Token& x : t) x = vocab(rng);
  return t;
}

CacheKey key(const std::string& session) {
  CacheKey k;
  k.tenant.api_key_identity = "tenant";
  k.bucket.model_id = "model";
  k.session = {SessionKind::kPromptCacheKey, session};
  return k;
}

void put(Store& store, const std::string& session, Origin origin, const std::vector<Token>& t) {
  store.insert(key(session), origin, t,
               std::make_shared<TinySnapshot>(static_cast<std::int64_t>(t.size())));
}

struct Fixture {
  ManualClock clock;
  std::unique_ptr<Store> store;
  std::vector<Token> prompt;  // 32k tokens; its first 32,000 are stored for session "target"
};

// n_entries in one tenant + bucket: a shared system prompt, then 256..1279 tokens of their own
// (many conversations), plus the target conversation's entry.
std::unique_ptr<Fixture> wide(MatchMode mode, std::int64_t n_entries) {
  auto f = std::make_unique<Fixture>();
  f->store = std::make_unique<Store>(
      mode,
      StorePolicy{.capacity_bytes = 1 << 30, .max_entries = n_entries + 1, .min_prefix_tokens = 16},
      f->clock);
  std::mt19937 rng(42);
  const std::vector<Token> system = random_tokens(rng, kSystemTokens);
  for (std::int64_t i = 0; i + 1 < n_entries; ++i) {
    std::vector<Token> t = system;
    const std::vector<Token> own = random_tokens(rng, 256 + static_cast<std::size_t>(i % 1024));
    t.insert(t.end(), own.begin(), own.end());
    put(*f->store, "s" + std::to_string(i), Origin::kCompletion, t);
  }
  f->prompt = system;
  const std::vector<Token> rest = random_tokens(rng, kPromptTokens - kSystemTokens);
  f->prompt.insert(f->prompt.end(), rest.begin(), rest.end());
  put(*f->store, "target", Origin::kCompletion,
      std::vector<Token>(f->prompt.begin(), f->prompt.begin() + 32000));
  return f;
}

// The adversarial shape: every entry is a prefix of the prompt (other sessions), so the walk
// passes one node per entry.
std::unique_ptr<Fixture> deep(MatchMode mode, std::int64_t n_entries) {
  auto f = std::make_unique<Fixture>();
  f->store = std::make_unique<Store>(
      mode,
      StorePolicy{.capacity_bytes = 1 << 30, .max_entries = n_entries, .min_prefix_tokens = 16},
      f->clock);
  std::mt19937 rng(7);
  f->prompt = random_tokens(rng, kPromptTokens);
  for (std::int64_t i = 1; i <= n_entries; ++i) {
    const auto len = static_cast<std::size_t>(i * 32000 / n_entries);
    put(*f->store, i == n_entries ? "target" : "s" + std::to_string(i), Origin::kCompletion,
        std::vector<Token>(f->prompt.begin(),
                           f->prompt.begin() + static_cast<std::ptrdiff_t>(len)));
  }
  return f;
}

void run_lookup(benchmark::State& state, const Fixture& f) {
  const CacheKey k = key("target");
  for (auto _ : state) {
    LookupResult r = f.store->lookup(k, f.prompt);
    if (r.n_tokens_usable != 32000) state.SkipWithError("expected a 32,000-token hit");
    benchmark::DoNotOptimize(r);
  }
  state.counters["entries"] = static_cast<double>(f.store->stats().entries);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kPromptTokens));
}

void BM_SnapshotLookupWide(benchmark::State& state) {
  run_lookup(state, *wide(MatchMode::kExactPrefix, state.range(0)));
}
void BM_PrefixLookupWide(benchmark::State& state) {
  run_lookup(state, *wide(MatchMode::kCommonPrefix, state.range(0)));
}
void BM_SnapshotLookupDeep(benchmark::State& state) {
  run_lookup(state, *deep(MatchMode::kExactPrefix, state.range(0)));
}
void BM_PrefixLookupDeep(benchmark::State& state) {
  run_lookup(state, *deep(MatchMode::kCommonPrefix, state.range(0)));
}

// Steady state at n_entries: each insert of a new 32k-token conversation evicts the LRU entry.
void BM_SnapshotInsertEvict(benchmark::State& state) {
  auto f = wide(MatchMode::kExactPrefix, state.range(0));
  std::mt19937 rng(9);
  std::vector<std::vector<Token>> prompts;
  for (int i = 0; i < 16; ++i) {
    std::vector<Token> t(f->prompt.begin(), f->prompt.begin() + kSystemTokens);
    const std::vector<Token> rest = random_tokens(rng, kPromptTokens - kSystemTokens);
    t.insert(t.end(), rest.begin(), rest.end());
    prompts.push_back(std::move(t));
  }
  std::int64_t i = 0;
  for (auto _ : state) {
    const auto& t = prompts[static_cast<std::size_t>(i % 16)];
    put(*f->store, "new" + std::to_string(i++), Origin::kCompletion, t);
  }
  state.counters["entries"] = static_cast<double>(f->store->stats().entries);
}

// One conversation growing turn by turn: each insert supersedes the previous turn's entry.
void BM_SnapshotInsertSupersede(benchmark::State& state) {
  auto f = wide(MatchMode::kExactPrefix, state.range(0));
  std::int64_t turn = 0;
  for (auto _ : state) {
    const std::size_t len = 30000 + static_cast<std::size_t>(turn % 2700);
    // A new conversation when the old one reaches the end of the prompt.
    put(*f->store, "chat" + std::to_string(turn++ / 2700), Origin::kCompletion,
        std::vector<Token>(f->prompt.begin(),
                           f->prompt.begin() + static_cast<std::ptrdiff_t>(len)));
  }
  state.counters["supersedes"] = static_cast<double>(f->store->stats().supersedes);
}

BENCHMARK(BM_SnapshotLookupWide)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrefixLookupWide)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotLookupDeep)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrefixLookupDeep)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotInsertEvict)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotInsertSupersede)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace recur::cache
