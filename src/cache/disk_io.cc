#include "cache/disk_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <memory>

#include "util/hash.h"

namespace recur::cache {
namespace {

// Closes on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string join(const std::string& root, const std::string& rel) { return root + "/" + rel; }

Status os_error(const char* what, const std::string& path, int err) {
  return Error(err == ENOENT ? StatusCode::kNotFound : StatusCode::kIo, "{} {}: {}", what, path,
               std::strerror(err));
}

Status write_all(int fd, const void* data, std::size_t n, const std::string& path) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return os_error("write", path, errno);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return Status::ok();
}

// Reads exactly n bytes at `offset`; a short file is kDataLoss (it was truncated).
Status read_exact(int fd, void* data, std::size_t n, std::int64_t offset, const std::string& path) {
  auto* p = static_cast<std::uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, offset);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return os_error("read", path, errno);
    if (r == 0) return Error(StatusCode::kDataLoss, "{}: ends {} bytes early", path, n);
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += r;
  }
  return Status::ok();
}

Status make_dirs(const std::string& root, const std::string& rel_dir) {
  std::string path = root;
  std::size_t start = 0;
  while (start <= rel_dir.size()) {
    const std::size_t slash = rel_dir.find('/', start);
    const std::size_t end = slash == std::string::npos ? rel_dir.size() : slash;
    path += "/" + rel_dir.substr(start, end - start);
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return os_error("mkdir", path, errno);
    start = end + 1;
  }
  return Status::ok();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  std::string h(buf);
  for (char& c : h) {
    if (c == '-' || c == '/') c = '_';  // '-' separates the temp name's fields
  }
  return h;
}

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Names in a directory, without . and ..; empty if it cannot be opened.
std::vector<std::string> list_dir(const std::string& path, bool dirs) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {  // some network filesystems do not say
      struct stat st {};
      is_dir = ::stat((path + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    if (is_dir == dirs) out.push_back(name);
  }
  ::closedir(d);
  return out;
}

}  // namespace

Status write_entry_file(const std::string& root, const std::string& rel_path,
                        const DiskHeader& header, TokenSpan tokens,
                        std::span<const std::uint8_t> payload, std::uint64_t temp_seq) {
  const std::size_t slash = rel_path.rfind('/');
  const std::string rel_dir = rel_path.substr(0, slash);
  RECUR_RETURN_IF_ERROR(make_dirs(root, rel_dir));
  const std::string dir = join(root, rel_dir);
  const std::string temp =
      fmt::format("{}/{}{}-{}-{}", dir, kDiskTempPrefix, host_name(), ::getpid(), temp_seq);
  const std::string final_path = join(root, rel_path);
  {
    Fd f{::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
    if (f.fd < 0) return os_error("create", temp, errno);
    const auto head = encode_disk_header(header);
    Status s = write_all(f.fd, head.data(), head.size(), temp);
    if (s.is_ok()) s = write_all(f.fd, tokens.data(), tokens.size_bytes(), temp);
    if (s.is_ok()) s = write_all(f.fd, payload.data(), payload.size(), temp);
    // The data must be on disk before the name is: otherwise a power loss could leave a
    // complete-looking name over missing blocks.
    if (s.is_ok() && ::fdatasync(f.fd) != 0) s = os_error("fdatasync", temp, errno);
    if (!s.is_ok()) {
      ::unlink(temp.c_str());
      return s;
    }
  }
  if (::rename(temp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return os_error("rename to", final_path, err);
  }
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);  // the rename itself survives a power loss
  return Status::ok();
}

Result<DiskEntryHead> read_entry_head(const std::string& root, const std::string& rel_path) {
  const std::string path = join(root, rel_path);
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return os_error("open", path, errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return os_error("stat", path, errno);
  std::array<std::uint8_t, kDiskHeaderBytes> head{};
  if (st.st_size < static_cast<off_t>(kDiskHeaderBytes)) {
    return Error(StatusCode::kDataLoss, "{}: {} bytes, shorter than a header ({})", path,
                 st.st_size, kDiskHeaderBytes);
  }
  RECUR_RETURN_IF_ERROR(read_exact(f.fd, head.data(), head.size(), 0, path));
  Result<DiskHeader> h = decode_disk_header(head, st.st_size);
  if (!h.is_ok()) return Error(StatusCode::kDataLoss, "{}: {}", path, h.status().message());
  DiskEntryHead out{.header = *h, .rel_path = rel_path, .mtime_ns = mtime_ns(st)};
  out.tokens.resize(static_cast<std::size_t>(h->n_tokens));
  RECUR_RETURN_IF_ERROR(read_exact(f.fd, out.tokens.data(), out.tokens.size() * sizeof(Token),
                                   kDiskHeaderBytes, path));
  if (tokens_hash(out.tokens) != h->tokens_hash) {
    return Error(StatusCode::kDataLoss, "{}: the tokens at byte {} do not match their hash", path,
                 kDiskHeaderBytes);
  }
  if (rel_path != disk_entry_path(*h)) {
    return Error(StatusCode::kDataLoss, "{}: the header describes another entry ({})", path,
                 disk_entry_path(*h));
  }
  return out;
}

Result<std::vector<std::uint8_t>> read_entry_payload(const std::string& root,
                                                     const std::string& rel_path,
                                                     const DiskHeader& expected) {
  const std::string path = join(root, rel_path);
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return os_error("open", path, errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return os_error("stat", path, errno);
  std::array<std::uint8_t, kDiskHeaderBytes> head{};
  if (st.st_size < static_cast<off_t>(kDiskHeaderBytes)) {
    return Error(StatusCode::kDataLoss, "{}: {} bytes, shorter than a header", path, st.st_size);
  }
  RECUR_RETURN_IF_ERROR(read_exact(f.fd, head.data(), head.size(), 0, path));
  Result<DiskHeader> h = decode_disk_header(head, st.st_size);
  if (!h.is_ok()) return Error(StatusCode::kDataLoss, "{}: {}", path, h.status().message());
  // Another replica may have renamed a new file of the same key over the one indexed: the same
  // entry, written again, is as good.
  if (h->model != expected.model || h->partition != expected.partition ||
      h->session != expected.session || h->n_tokens != expected.n_tokens ||
      h->tokens_hash != expected.tokens_hash || h->kind != expected.kind) {
    return Error(StatusCode::kDataLoss, "{}: the header no longer describes the indexed entry",
                 path);
  }
  // Sequential read advice: a cold read streams at the disk's rate.
  ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  // One pass over the payload: each chunk is read into a buffer that stays in L2, hashed there
  // and appended to reserved (never zeroed) memory. Reading the whole payload into a zeroed
  // vector and hashing it afterwards walked 19 MB three times (23 ms warm instead of ~8).
  const auto n = static_cast<std::size_t>(h->payload_bytes);
  std::vector<std::uint8_t> payload;
  payload.reserve(n);
  const std::unique_ptr<std::uint8_t[]> chunk(new std::uint8_t[std::min(n, kDiskReadChunkBytes)]);
  Hasher hasher;
  for (std::size_t done = 0; done < n;) {
    const std::size_t len = std::min(n - done, kDiskReadChunkBytes);
    RECUR_RETURN_IF_ERROR(read_exact(f.fd, chunk.get(), len,
                                     h->payload_offset() + static_cast<std::int64_t>(done), path));
    hasher.update(chunk.get(), len);
    payload.insert(payload.end(), chunk.get(), chunk.get() + len);
    done += len;
  }
  if (hasher.digest() != h->payload_hash) {
    return Error(StatusCode::kDataLoss, "{}: the payload (bytes {}-{}) does not match its checksum",
                 path, h->payload_offset(), h->file_bytes() - 1);
  }
  return payload;
}

Status remove_entry_file(const std::string& root, const std::string& rel_path) {
  const std::string path = join(root, rel_path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return os_error("unlink", path, errno);
  return Status::ok();
}

DiskListing list_session_files(const std::string& root, const std::string& session_dir) {
  DiskListing out;
  for (const std::string& name : list_dir(join(root, session_dir), /*dirs=*/false)) {
    const std::string rel = session_dir + "/" + name;
    if (name.starts_with(kDiskTempPrefix)) {
      out.temps.push_back(rel);
    } else if (ends_with(name, kDiskEntrySuffix)) {
      out.entries.push_back(rel);
    }
  }
  return out;
}

DiskListing list_entry_files(const std::string& root) {
  DiskListing out;
  for (const std::string& part : list_dir(root, /*dirs=*/true)) {
    for (const std::string& session : list_dir(join(root, part), /*dirs=*/true)) {
      DiskListing one = list_session_files(root, part + "/" + session);
      out.entries.insert(out.entries.end(), one.entries.begin(), one.entries.end());
      out.temps.insert(out.temps.end(), one.temps.begin(), one.temps.end());
    }
  }
  return out;
}

bool is_abandoned_temp(const std::string& root, const std::string& rel_path,
                       std::int64_t stale_after_ns) {
  const std::string name = rel_path.substr(rel_path.rfind('/') + 1 + kDiskTempPrefix.size());
  // <host>-<pid>-<seq>
  const std::size_t a = name.find('-');
  const std::size_t b = a == std::string::npos ? a : name.find('-', a + 1);
  if (b != std::string::npos && name.substr(0, a) == host_name()) {
    const long pid = std::strtol(name.substr(a + 1, b - a - 1).c_str(), nullptr, 10);
    if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      return true;
    }
  }
  struct stat st {};
  if (::stat(join(root, rel_path).c_str(), &st) != 0) return false;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::int64_t now_ns = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  return now_ns - mtime_ns(st) > stale_after_ns;
}

void prune_empty_dirs(const std::string& root, const std::string& rel_path) {
  std::string rel = rel_path;
  for (int up = 0; up < 2; ++up) {
    const std::size_t slash = rel.rfind('/');
    if (slash == std::string::npos) return;
    rel = rel.substr(0, slash);
    // rmdir fails on a directory that is not empty: exactly the check wanted, race-free.
    if (::rmdir(join(root, rel).c_str()) != 0) return;
  }
}

}  // namespace recur::cache
