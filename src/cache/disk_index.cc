#include "cache/disk_index.h"

#include <algorithm>

#include "util/check.h"

namespace recur::cache {
namespace {

bool is_prefix(const std::vector<Token>& a, TokenSpan b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

std::int64_t common_prefix(const std::vector<Token>& a, TokenSpan b) {
  const auto m = std::mismatch(
      a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())), b.begin());
  return m.first - a.begin();
}

}  // namespace

void DiskIndex::add(DiskEntryHead entry) {
  remove(entry.rel_path);
  const std::string path = entry.rel_path;
  const std::uint64_t seq = ++next_seq_;
  bytes_ += entry.header.file_bytes();
  sessions_[entry.header.partition][entry.header.session].insert(path);
  lru_.emplace(seq, path);
  entries_.emplace(path, Slot{.head = std::move(entry), .use_seq = seq});
}

std::optional<DiskEntryHead> DiskIndex::remove(const std::string& rel_path) {
  auto it = entries_.find(rel_path);
  if (it == entries_.end()) return std::nullopt;
  Slot slot = std::move(it->second);
  entries_.erase(it);
  lru_.erase(slot.use_seq);
  bytes_ -= slot.head.header.file_bytes();
  auto part = sessions_.find(slot.head.header.partition);
  auto session = part->second.find(slot.head.header.session);
  session->second.erase(rel_path);
  if (session->second.empty()) part->second.erase(session);
  if (part->second.empty()) sessions_.erase(part);
  return std::move(slot.head);
}

void DiskIndex::touch(const std::string& rel_path) {
  auto it = entries_.find(rel_path);
  if (it == entries_.end()) return;
  lru_.erase(it->second.use_seq);
  it->second.use_seq = ++next_seq_;
  lru_.emplace(it->second.use_seq, rel_path);
}

const std::set<std::string>* DiskIndex::session_paths(std::uint64_t partition,
                                                      std::uint64_t session) const {
  auto part = sessions_.find(partition);
  if (part == sessions_.end()) return nullptr;
  auto s = part->second.find(session);
  return s == part->second.end() ? nullptr : &s->second;
}

std::optional<DiskCandidate> DiskIndex::best(const DiskQuery& query) const {
  return query.kind == DiskKind::kSnapshot ? best_exact(query) : best_common(query);
}

std::optional<DiskCandidate> DiskIndex::best_exact(const DiskQuery& q) const {
  // As the snapshot store: a non-truncatable state must leave one prompt token to compute.
  const auto max_usable = static_cast<std::int64_t>(q.tokens.size()) - 1;
  const std::int64_t min_usable =
      std::max<std::int64_t>({1, q.min_prefix_tokens, q.better_than + 1});
  const Slot* best = nullptr;
  bool best_own = false;
  // The session's own entries, then the shared session's: as in RAM, the longest usable entry
  // wins, and at equal length the conversation's own state.
  auto consider = [&](std::uint64_t session, bool own) {
    const std::set<std::string>* paths = session_paths(q.partition, session);
    if (paths == nullptr) return;
    for (const std::string& p : *paths) {
      const Slot& s = entries_.at(p);
      const std::int64_t n = s.head.header.n_tokens;
      if (s.head.header.kind != q.kind || n < min_usable || n > max_usable) continue;
      if (!is_prefix(s.head.tokens, q.tokens)) continue;
      const std::int64_t best_n = best == nullptr ? 0 : best->head.header.n_tokens;
      if (best == nullptr || n > best_n ||
          (n == best_n && own == best_own && s.use_seq > best->use_seq)) {
        best = &s;
        best_own = own;
      }
    }
  };
  consider(q.session, true);
  if (q.shared_session != 0 && q.shared_session != q.session) consider(q.shared_session, false);
  if (best == nullptr) return std::nullopt;
  return DiskCandidate{.entry = best->head, .n_usable = best->head.header.n_tokens};
}

std::optional<DiskCandidate> DiskIndex::best_common(const DiskQuery& q) const {
  auto part = sessions_.find(q.partition);
  if (part == sessions_.end()) return std::nullopt;
  const auto n_prompt = static_cast<std::int64_t>(q.tokens.size());
  const Slot* best = nullptr;
  std::int64_t best_usable = 0;
  for (const auto& [session, paths] : part->second) {
    for (const std::string& p : paths) {
      const Slot& s = entries_.at(p);
      if (s.head.header.kind != q.kind) continue;
      std::int64_t usable = std::min(common_prefix(s.head.tokens, q.tokens), n_prompt - 1);
      usable -= usable % q.block_tokens;
      if (usable < std::max<std::int64_t>(1, q.min_prefix_tokens) || usable <= q.better_than) {
        continue;
      }
      // Ties go to the most recently used: a deterministic rule, and the entry most likely warm.
      if (best == nullptr || usable > best_usable ||
          (usable == best_usable && s.use_seq > best->use_seq)) {
        best = &s;
        best_usable = usable;
      }
    }
  }
  if (best == nullptr) return std::nullopt;
  return DiskCandidate{.entry = best->head, .n_usable = best_usable};
}

std::vector<std::string> DiskIndex::strict_prefixes(const DiskHeader& h, TokenSpan tokens) const {
  std::vector<std::string> out;
  // As in RAM: a deeper shared prefix never makes a shallower one useless.
  if (h.origin == Origin::kShared) return out;
  const std::set<std::string>* paths = session_paths(h.partition, h.session);
  if (paths == nullptr) return out;
  for (const std::string& p : *paths) {
    const DiskEntryHead& e = entries_.at(p).head;
    if (e.header.kind == h.kind && e.header.origin == h.origin &&
        e.header.n_tokens < static_cast<std::int64_t>(tokens.size()) &&
        is_prefix(e.tokens, tokens)) {
      out.push_back(p);
    }
  }
  return out;
}

std::vector<std::string> DiskIndex::paths_of_session(std::uint64_t partition,
                                                     std::uint64_t session) const {
  const std::set<std::string>* paths = session_paths(partition, session);
  return paths == nullptr ? std::vector<std::string>{}
                          : std::vector<std::string>(paths->begin(), paths->end());
}

std::optional<std::string> DiskIndex::lru_victim() const {
  if (lru_.empty()) return std::nullopt;
  return lru_.begin()->second;
}

std::vector<std::string> DiskIndex::all_paths() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [seq, path] : lru_) out.push_back(path);
  return out;
}

void DiskIndex::check_invariants() const {
  std::int64_t bytes = 0;
  std::size_t in_sessions = 0;
  for (const auto& [path, slot] : entries_) {
    bytes += slot.head.header.file_bytes();
    RECUR_CHECK(lru_.at(slot.use_seq) == path);
    RECUR_CHECK(slot.head.rel_path == path);
  }
  for (const auto& [part, sessions] : sessions_) {
    for (const auto& [session, paths] : sessions) {
      RECUR_CHECK(!paths.empty());
      in_sessions += paths.size();
    }
  }
  RECUR_CHECK(bytes == bytes_);
  RECUR_CHECK(lru_.size() == entries_.size() && in_sessions == entries_.size());
}

}  // namespace recur::cache
