#include "util/stage_times.h"

#include <chrono>
#include <mutex>

namespace recur::stages {

namespace detail {
bool g_enabled = false;
}  // namespace detail

namespace {

struct Open {
  std::size_t index;    // into the table ...
  std::uint64_t epoch;  // ... as it was before this many resets
  std::chrono::steady_clock::time_point start;
};

std::mutex g_mu;
std::vector<Stage> g_table;  // guarded by g_mu
std::uint64_t g_epoch = 0;   // guarded by g_mu; resets so far
thread_local std::vector<Open> t_open;

// The entry of `path`, added when new. Linear: a forward has a few dozen stages.
std::size_t find_or_add(const std::string& path, int depth) {
  for (std::size_t i = 0; i < g_table.size(); ++i) {
    if (g_table[i].path == path) return i;
  }
  g_table.push_back({.path = path, .depth = depth});
  return g_table.size() - 1;
}

}  // namespace

void set_enabled(bool on) { detail::g_enabled = on; }

void reset() {
  const std::lock_guard lock(g_mu);
  g_table.clear();
  ++g_epoch;
}

void add_flops(double flops) {
  if (!enabled() || t_open.empty()) return;
  const std::lock_guard lock(g_mu);
  for (const Open& o : t_open) {
    if (o.epoch == g_epoch) g_table[o.index].flops += flops;
  }
}

std::vector<Stage> table() {
  const std::lock_guard lock(g_mu);
  return g_table;
}

void Scope::enter(const char* name) {
  const std::lock_guard lock(g_mu);
  // Under a scope opened before a reset, the path starts afresh: the parent has no entry now.
  const bool parent = !t_open.empty() && t_open.back().epoch == g_epoch;
  std::string path = parent ? g_table[t_open.back().index].path + "/" : std::string();
  path += name;
  const int depth = parent ? g_table[t_open.back().index].depth + 1 : 0;
  t_open.push_back({.index = find_or_add(path, depth),
                    .epoch = g_epoch,
                    .start = std::chrono::steady_clock::now()});
  open_ = true;
}

void Scope::leave() {
  const auto now = std::chrono::steady_clock::now();
  const std::lock_guard lock(g_mu);
  const Open o = t_open.back();
  t_open.pop_back();
  if (o.epoch != g_epoch) return;  // reset() while the scope was open
  Stage& s = g_table[o.index];
  s.seconds += std::chrono::duration<double>(now - o.start).count();
  ++s.calls;
}

}  // namespace recur::stages
