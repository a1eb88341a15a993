#include "hub/pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "hub/digest.h"
#include "hub/http_client.h"
#include "hub/repo_cache.h"
#include "util/format.h"
#include "util/log.h"
#include "util/progress.h"

namespace recur::hub {

namespace fs = std::filesystem;

namespace {

constexpr int kAttempts = 4;  // per file: the first try and three resumptions

// One file of the snapshot and what the Hub says about it.
struct RemoteFile {
  std::string name;
  std::string etag;          // normalized: the blob's name
  std::int64_t size = -1;    // -1: unknown
  std::string download_url;  // the CDN location of an LFS file, else the resolve URL
  bool present = false;      // already in the snapshot (a commit's files never change)
};

struct Context {
  const HubConfig& config;
  const PullRequest& request;
  RepoCache cache;
  HttpClient http;
  std::string commit;
};

bool is_safe_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.' ||
      name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos) {
    return false;
  }
  return std::none_of(name.begin(), name.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

// ETag: "abc" or W/"abc" -> abc; nullopt unless it is a plain token safe as a file name.
std::optional<std::string> normalize_etag(std::string tag) {
  if (tag.starts_with("W/")) tag.erase(0, 2);
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"')
    tag = tag.substr(1, tag.size() - 2);
  if (tag.empty() || tag.size() > 128) return std::nullopt;
  for (char c : tag) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return std::nullopt;
  }
  return tag;
}

bool is_hex(std::string_view s, std::size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

std::optional<std::int64_t> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::int64_t v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || v > (INT64_MAX - 9) / 10)
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string resolve_url(const Context& cx, std::string_view file) {
  return cx.config.endpoint + "/" + cx.request.repo_id + "/resolve/" + cx.commit + "/" +
         url_encode(file, true);
}

// The Hub's error for a non-2xx reply, in words that say what to do.
Status hub_error(const Context& cx, const HttpReply& r, std::string_view file) {
  const std::string code = r.header("x-error-code");
  std::string detail = r.header("x-error-message");
  if (detail.empty()) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) detail = j["error"];
  }
  const std::string& repo = cx.request.repo_id;
  const std::string& endpoint = cx.config.endpoint;
  const std::string token_note =
      cx.config.token.empty() ? "no token was sent: set HF_TOKEN (or log in with `hf auth login`)"
                              : "the token from " + cx.config.token_source + " was sent";
  if (code == "GatedRepo" || (r.status == 403 && detail.find("gated") != std::string::npos)) {
    return Error(StatusCode::kFailedPrecondition,
                 "{} is a gated model (HTTP {}): accept its conditions at {}/{} and use a token of "
                 "that account; {}",
                 repo, r.status, endpoint, repo, token_note);
  }
  if (code == "RevisionNotFound") {
    return Error(StatusCode::kNotFound, "{} has no revision '{}' on {} (HTTP {})", repo,
                 cx.request.revision, endpoint, r.status);
  }
  if (code == "EntryNotFound" || (r.status == 404 && !file.empty() && code.empty())) {
    return Error(StatusCode::kNotFound, "{} at {} has no file {} on {} (HTTP {})", repo,
                 cx.commit.empty() ? cx.request.revision : cx.commit, file, endpoint, r.status);
  }
  if (code == "RepoNotFound" || r.status == 401 || r.status == 404) {
    return Error(StatusCode::kNotFound,
                 "repository {} not found on {} (HTTP {}); check the name, and if it is private "
                 "or gated, {}",
                 repo, endpoint, r.status, token_note);
  }
  if (r.status == 403) {
    return Error(StatusCode::kFailedPrecondition, "{} refused access to {} (HTTP 403{}{}); {}",
                 endpoint, repo, detail.empty() ? "" : ": ", detail, token_note);
  }
  return Error(StatusCode::kIo, "{}: HTTP {}{}{}", r.url, r.status, detail.empty() ? "" : ": ",
               detail);
}

Status unreachable(const Context& cx, const Status& network) {
  return Error(StatusCode::kIo,
               "cannot reach the Hugging Face Hub at {} ({}); check the network or HF_ENDPOINT, "
               "or set HF_HUB_OFFLINE=1 to use only models already in {}",
               cx.config.endpoint, network.message(), cx.config.cache_dir);
}

struct RepoListing {
  std::string commit;
  std::set<std::string> files;
};

std::string revision_url(const Context& cx) {
  return cx.config.endpoint + "/api/models/" + cx.request.repo_id + "/revision/" +
         url_encode(cx.request.revision, false);
}

// The reply of GET /api/models/REPO/revision/REV: the commit and the file names.
Result<RepoListing> parse_listing(const Context& cx, const HttpReply& r) {
  const std::string url = revision_url(cx);
  if (r.status != 200) return hub_error(cx, r, "");
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("sha") || !j["sha"].is_string() || !j.contains("siblings") ||
      !j["siblings"].is_array()) {
    return Error(StatusCode::kDataLoss, "{}: not a model description (no sha or siblings)", url);
  }
  RepoListing out{.commit = j["sha"].get<std::string>()};
  if (!is_commit_hash(out.commit)) {
    return Error(StatusCode::kDataLoss, "{}: sha '{}' is not a commit hash", url, out.commit);
  }
  for (const auto& s : j["siblings"]) {
    if (s.is_object() && s.contains("rfilename") && s["rfilename"].is_string()) {
      out.files.insert(s["rfilename"].get<std::string>());
    }
  }
  return out;
}

Result<RemoteFile> describe(Context& cx, const std::string& name) {
  const std::string url = resolve_url(cx, name);
  RECUR_ASSIGN_OR_RETURN(HttpReply r, cx.http.head(url));
  const bool redirect = r.status >= 300 && r.status < 400;
  if (!redirect && r.status != 200) return hub_error(cx, r, name);
  std::string tag = r.header("x-linked-etag");
  if (tag.empty()) tag = r.header("etag");
  auto etag = normalize_etag(tag);
  if (!etag) {
    return Error(StatusCode::kDataLoss, "{}: the Hub sent no usable ETag ('{}')", url, tag);
  }
  RemoteFile f{.name = name, .etag = *etag, .download_url = url};
  if (auto s = parse_size(r.header("x-linked-size"))) {
    f.size = *s;
  } else if (!redirect) {
    f.size = parse_size(r.header("content-length")).value_or(-1);
  }
  if (redirect && !r.header("location").empty()) f.download_url = r.header("location");
  return f;
}

// An exclusive lock on the blob's lock file while it downloads, so two processes sharing the
// cache never write one .incomplete file at once.
class BlobLock {
 public:
  static Result<BlobLock> take(const fs::path& path, std::string_view what) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Error(StatusCode::kIo, "cannot open the lock file {}", path.string());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      log::info("waiting for another process that downloads {}", what);
      if (::flock(fd, LOCK_EX) != 0) {
        ::close(fd);
        return Error(StatusCode::kIo, "cannot lock {}", path.string());
      }
    }
    return BlobLock(fd);
  }
  BlobLock(BlobLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  BlobLock& operator=(BlobLock&&) = delete;
  ~BlobLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  explicit BlobLock(int fd) : fd_(fd) {}
  int fd_;
};

std::int64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<std::int64_t>(n);
}

// Hashes the bytes already in a partial file, so a resumed download is checked whole.
Status hash_existing(const fs::path& p, std::int64_t n, Digest& d) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (n > 0 && in) {
    in.read(buf.data(), static_cast<std::streamsize>(std::min<std::int64_t>(n, buf.size())));
    d.update(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
    n -= in.gcount();
  }
  if (n != 0) return Error(StatusCode::kIo, "cannot read {}", p.string());
  return Status::ok();
}

// One attempt: appends to `part` from its current size. Returns the reply (any status) or the
// network error.
Result<HttpReply> fetch_once(Context& cx, const RemoteFile& f, const fs::path& part,
                             std::unique_ptr<Digest>& sha256, Progress& progress) {
  std::int64_t offset = file_size_or_zero(part);
  if (f.size >= 0 && offset > f.size) offset = 0;  // longer than the file: start over
  std::error_code ec;
  if (offset == 0) fs::resize_file(part, 0, ec);
  if (ec) return Error(StatusCode::kIo, "cannot write {}: {}", part.string(), ec.message());
  if (sha256) {
    sha256 = std::make_unique<Digest>(DigestKind::kSha256);
    RECUR_RETURN_IF_ERROR(hash_existing(part, offset, *sha256));
  }
  std::FILE* out = std::fopen(part.c_str(), "r+b");
  if (out == nullptr) return Error(StatusCode::kIo, "cannot write {}", part.string());
  std::fseek(out, static_cast<long>(offset), SEEK_SET);
  bool write_failed = false;
  auto on_start = [&](long status) {
    if (status == 200 && offset > 0) {
      // The server sent the whole file instead of the range: start over.
      log::info("{}: the server ignored the range request; downloading it whole", f.name);
      progress.add(-offset);
      std::fflush(out);
      if (::ftruncate(::fileno(out), 0) != 0) write_failed = true;
      std::fseek(out, 0, SEEK_SET);
      if (sha256) sha256 = std::make_unique<Digest>(DigestKind::kSha256);
      offset = 0;
    }
  };
  auto sink = [&](std::string_view bytes) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size()) {
      write_failed = true;
      return false;
    }
    if (sha256) sha256->update(bytes);
    progress.add(static_cast<std::int64_t>(bytes.size()));
    return true;
  };
  auto reply = cx.http.download(f.download_url, offset, on_start, sink);
  if (std::fclose(out) != 0) write_failed = true;
  if (write_failed) return Error(StatusCode::kIo, "cannot write {} (disk full?)", part.string());
  return reply;
}

Status verify(const RemoteFile& f, const fs::path& part, Digest* sha256) {
  std::string got;
  std::string kind;
  if (is_hex(f.etag, 64) && sha256 != nullptr) {
    got = sha256->hex_final();
    kind = "sha256 (X-Linked-Etag)";
  } else if (is_hex(f.etag, 40)) {
    RECUR_ASSIGN_OR_RETURN(got, file_digest(part.string(), DigestKind::kSha1));
    kind = "git blob sha1 (ETag)";
  } else {
    log::debug("{}: ETag {} is not a checksum; size checked only", f.name, f.etag);
    return Status::ok();
  }
  if (got == f.etag) return Status::ok();
  std::error_code ec;
  fs::remove(part, ec);
  return Error(StatusCode::kDataLoss,
               "{}: checksum mismatch: the Hub names {} {}, the downloaded bytes give {}; the "
               "download was discarded (run again to download it anew)",
               f.name, kind, f.etag, got);
}

// Downloads one blob (resuming its .incomplete file, retrying cut transfers) and verifies it.
Status download_blob(Context& cx, const RemoteFile& f, Progress& progress) {
  const fs::path blob = cx.cache.blob(f.etag);
  std::error_code ec;
  if (fs::exists(blob, ec)) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(BlobLock lock, BlobLock::take(cx.cache.lock(f.etag), f.name));
  if (fs::exists(blob, ec)) return Status::ok();  // another process finished it meanwhile
  fs::create_directories(blob.parent_path(), ec);
  const fs::path part = blob.string() + ".incomplete";
  if (!fs::exists(part, ec)) std::ofstream(part, std::ios::binary).flush();
  const std::int64_t resumed = file_size_or_zero(part);
  if (resumed > 0) log::info("{}: resuming after {}", f.name, format_bytes(resumed));
  progress.add(resumed);
  std::unique_ptr<Digest> sha256;
  if (is_hex(f.etag, 64)) sha256 = std::make_unique<Digest>(DigestKind::kSha256);
  Status last = Status::ok();
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    const std::int64_t before = file_size_or_zero(part);
    auto reply = fetch_once(cx, f, part, sha256, progress);
    const std::int64_t now = file_size_or_zero(part);
    if (reply.is_ok() && reply->status >= 300 && reply->status < 500) {
      if (reply->status == 416 && f.size >= 0 && now == f.size) break;  // it was complete
      return hub_error(cx, *reply, f.name);
    }
    if (reply.is_ok() && reply->status < 300 && (f.size < 0 || now == f.size)) break;
    if (!reply.is_ok()) {
      last = reply.status();
    } else if (reply->status >= 500) {
      last = Error(StatusCode::kIo, "HTTP {} from {}", reply->status, reply->url);
    } else {
      last = Error(StatusCode::kIo, "the transfer ended early");
    }
    if (reply.is_ok() && f.size >= 0 && now > f.size) {
      return Error(StatusCode::kDataLoss, "{}: got {} bytes, more than the {} the Hub named",
                   f.name, now, f.size);
    }
    if (attempt == kAttempts) break;
    log::warn("{}: download cut at {} of {} ({}); resuming", f.name, format_bytes(now),
              f.size >= 0 ? format_bytes(f.size) : "?", last.message());
    // Back off only when the attempt made no headway.
    if (now == before) std::this_thread::sleep_for(std::chrono::milliseconds(500 * attempt));
  }
  const std::int64_t got = file_size_or_zero(part);
  if (f.size >= 0 && got != f.size) {
    return Error(StatusCode::kIo,
                 "{}: download stopped at {} of {} after {} attempts ({}); the part is kept in {} "
                 "and the next run resumes it",
                 f.name, format_bytes(got), format_bytes(f.size), kAttempts, last.message(),
                 part.string());
  }
  RECUR_RETURN_IF_ERROR(verify(f, part, sha256.get()));
  fs::rename(part, blob, ec);
  if (ec) return Error(StatusCode::kIo, "cannot rename {}: {}", part.string(), ec.message());
  return Status::ok();
}

// The weights to fetch: the shards the index names, else model.safetensors, else every
// top-level *.safetensors.
Result<std::vector<std::string>> weight_files(Context& cx, const RepoListing& listing,
                                              const std::vector<RemoteFile>& small) {
  for (const RemoteFile& f : small) {
    if (f.name != "model.safetensors.index.json") continue;
    std::ifstream in(f.present ? cx.cache.snapshot(cx.commit) / f.name : cx.cache.blob(f.etag),
                     std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return Error(StatusCode::kDataLoss, "{}: model.safetensors.index.json has no weight_map",
                   cx.request.repo_id);
    }
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : j["weight_map"].items()) {
      if (!shard.is_string() || !is_safe_name(shard.get<std::string>())) {
        return Error(StatusCode::kDataLoss, "{}: the index names a shard that is not a file name",
                     cx.request.repo_id);
      }
      shards.insert(shard.get<std::string>());
    }
    return std::vector<std::string>(shards.begin(), shards.end());
  }
  if (listing.files.count("model.safetensors"))
    return std::vector<std::string>{"model.safetensors"};
  std::vector<std::string> all;
  for (const std::string& name : listing.files) {
    if (name.ends_with(".safetensors") && is_safe_name(name)) all.push_back(name);
  }
  if (all.empty()) {
    return Error(StatusCode::kNotFound,
                 "{} at {} has no safetensors weights (recur loads *.safetensors only)",
                 cx.request.repo_id, cx.commit);
  }
  return all;
}

Result<std::vector<RemoteFile>> describe_all(Context& cx, const std::vector<std::string>& names) {
  std::vector<RemoteFile> out;
  for (const std::string& name : names) {
    if (::access((cx.cache.snapshot(cx.commit) / name).c_str(), R_OK) == 0) {
      out.push_back({.name = name, .present = true});
      continue;
    }
    RECUR_ASSIGN_OR_RETURN(RemoteFile f, describe(cx, name));
    out.push_back(std::move(f));
  }
  return out;
}

Status download_all(Context& cx, const std::vector<RemoteFile>& files, PullResult& result) {
  std::int64_t total = 0;
  std::vector<const RemoteFile*> missing;
  std::error_code ec;
  for (const RemoteFile& f : files) {
    if (f.present || fs::exists(cx.cache.blob(f.etag), ec)) continue;
    missing.push_back(&f);
    total += std::max<std::int64_t>(0, f.size);
  }
  if (missing.empty()) return Status::ok();
  Progress progress("downloading " + cx.request.repo_id, total, ProgressUnit::kBytes);
  for (const RemoteFile* f : missing) {
    if (Status s = download_blob(cx, *f, progress); !s.is_ok()) {
      progress.finish("failed");
      return s;
    }
    ++result.files_downloaded;
    result.bytes_downloaded += file_size_or_zero(cx.cache.blob(f->etag));
  }
  progress.finish();
  return Status::ok();
}

Result<PullResult> pull_online(Context& cx) {
  PullResult result;
  auto reply = cx.http.get(revision_url(cx));
  if (!reply.is_ok()) {
    // Unreachable (not refused): a complete cached snapshot still serves.
    if (auto local = cx.cache.local_snapshot(cx.request.revision); local.is_ok()) {
      log::warn("cannot reach {} ({}); using the cached snapshot {}", cx.config.endpoint,
                reply.status().message(), local->string());
      return PullResult{
          .snapshot = *local, .commit = local->filename().string(), .from_cache_only = true};
    }
    return unreachable(cx, reply.status());
  }
  RECUR_ASSIGN_OR_RETURN(RepoListing listing_value, parse_listing(cx, *reply));
  const RepoListing* listing = &listing_value;
  cx.commit = listing->commit;
  if (cx.request.revision != cx.commit) {
    RECUR_RETURN_IF_ERROR(cx.cache.write_ref(cx.request.revision, cx.commit));
  }
  std::vector<std::string> small_names;
  for (const std::string& name : listing->files) {
    if (is_wanted_file(name) && !name.ends_with(".safetensors")) small_names.push_back(name);
  }
  if (!listing->files.count("config.json")) {
    return Error(StatusCode::kNotFound, "{} at {} has no config.json: not a transformers model",
                 cx.request.repo_id, cx.commit);
  }
  RECUR_ASSIGN_OR_RETURN(std::vector<RemoteFile> small, describe_all(cx, small_names));
  RECUR_RETURN_IF_ERROR(download_all(cx, small, result));
  RECUR_ASSIGN_OR_RETURN(std::vector<std::string> weight_names, weight_files(cx, *listing, small));
  for (const std::string& w : weight_names) {
    if (!listing->files.count(w)) {
      return Error(StatusCode::kNotFound, "{}: the index names {}, which the repository lacks",
                   cx.request.repo_id, w);
    }
  }
  RECUR_ASSIGN_OR_RETURN(std::vector<RemoteFile> weights, describe_all(cx, weight_names));
  RECUR_RETURN_IF_ERROR(download_all(cx, weights, result));
  // Linked last, all at once: a snapshot never shows a file whose siblings are still missing.
  for (const auto* list : {&small, &weights}) {
    for (const RemoteFile& f : *list) {
      if (!f.present) RECUR_RETURN_IF_ERROR(cx.cache.link(cx.commit, f.name, f.etag));
    }
  }
  result.snapshot = cx.cache.snapshot(cx.commit);
  result.commit = cx.commit;
  RECUR_RETURN_IF_ERROR(check_model_files(result.snapshot));
  return result;
}

}  // namespace

bool is_wanted_file(std::string_view name) {
  static const std::set<std::string_view> kNames = {
      "config.json",           "generation_config.json",  "tokenizer.json",
      "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
      "chat_template.json",    "added_tokens.json",       "model.safetensors.index.json"};
  if (!is_safe_name(name)) return false;
  return kNames.count(name) > 0 || name.ends_with(".safetensors");
}

Result<PullResult> pull(const HubConfig& config, const PullRequest& request) {
  if (!is_repo_id(request.repo_id)) {
    return Error(StatusCode::kInvalidArgument,
                 "'{}' is not a Hugging Face repository id (ORG/NAME: letters, digits, '-', '_', "
                 "'.')",
                 request.repo_id);
  }
  if (!is_revision(request.revision)) {
    return Error(StatusCode::kInvalidArgument, "--revision '{}' is not a branch, tag or commit",
                 request.revision);
  }
  Context cx{.config = config,
             .request = request,
             .cache = RepoCache(config.cache_dir, request.repo_id),
             .http = HttpClient({.token = config.token,
                                 .request_timeout_ms = config.request_timeout_ms,
                                 .stall_timeout_ms = config.stall_timeout_ms})};
  if (config.offline) {
    auto local = cx.cache.local_snapshot(request.revision);
    if (!local.is_ok()) {
      return Error(StatusCode::kNotFound,
                   "HF_HUB_OFFLINE is set and {} (revision {}) is not complete in the cache {}: "
                   "{}; download it once without HF_HUB_OFFLINE",
                   request.repo_id, request.revision, config.cache_dir, local.status().message());
    }
    return PullResult{
        .snapshot = *local, .commit = local->filename().string(), .from_cache_only = true};
  }
  return pull_online(cx);
}

}  // namespace recur::hub
