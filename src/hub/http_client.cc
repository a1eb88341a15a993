#include "hub/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace recur::hub {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return std::string(s);
}

// What one transfer collects from curl's callbacks.
struct Transfer {
  HttpReply* reply = nullptr;
  std::size_t max_body = 0;
  bool streaming = false;  // download(): 2xx bodies go to the sink
  bool started = false;
  bool sink_refused = false;
  CURL* curl = nullptr;
  const std::function<void(long)>* on_start = nullptr;
  const std::function<bool(std::string_view)>* sink = nullptr;
};

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {
    t->reply->headers.clear();  // a new response (after a redirect or a 100 Continue)
  } else if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
    t->reply->headers[lower(std::string(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view bytes(data, size * n);
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (t->streaming && status >= 200 && status < 300) {
    if (!t->started) {
      t->started = true;
      (*t->on_start)(status);
    }
    if (!(*t->sink)(bytes)) {
      t->sink_refused = true;
      return 0;  // aborts the transfer
    }
    return bytes.size();
  }
  const std::size_t room = t->max_body - std::min(t->max_body, t->reply->body.size());
  t->reply->body.append(bytes.substr(0, room));
  return bytes.size();
}

std::once_flag g_curl_init;

}  // namespace

std::string HttpReply::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string url_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

struct HttpClient::Impl {
  HttpClientOptions options;
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;

  // Sets what every request shares; `transfer` receives the callbacks.
  void prepare(const std::string& url, Transfer& t) {
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_USERAGENT, options.user_agent.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.request_timeout_ms));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    if (!options.token.empty()) {
      // Bearer auth through curl (not a raw header), which keeps it to the original host.
      curl_easy_setopt(curl, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BEARER));
      curl_easy_setopt(curl, CURLOPT_XOAUTH2_BEARER, options.token.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    t.curl = curl;
  }

  Result<HttpReply> perform(const std::string& url, Transfer& t) {
    const CURLcode rc = curl_easy_perform(curl);
    char* effective = nullptr;
    curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective);
    if (effective != nullptr) t.reply->url = effective;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &t.reply->status);
    if (rc != CURLE_OK && !t.sink_refused) {
      return Error(StatusCode::kIo, "{}: {}", url, curl_easy_strerror(rc));
    }
    return std::move(*t.reply);
  }
};

HttpClient::HttpClient(HttpClientOptions options) : impl_(std::make_unique<Impl>()) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  impl_->options = std::move(options);
  impl_->curl = curl_easy_init();
  // The Hub's sizes and ETags describe the stored bytes, not a compressed transfer.
  impl_->headers = curl_slist_append(nullptr, "Accept-Encoding: identity");
}

HttpClient::~HttpClient() {
  curl_slist_free_all(impl_->headers);
  curl_easy_cleanup(impl_->curl);
}

Result<HttpReply> HttpClient::get(const std::string& url, std::size_t max_body_bytes) {
  HttpReply reply;
  Transfer t{.reply = &reply, .max_body = max_body_bytes};
  impl_->prepare(url, t);
  curl_easy_setopt(impl_->curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(impl_->curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(impl_->curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(impl_->options.request_timeout_ms * 3));
  return impl_->perform(url, t);
}

Result<HttpReply> HttpClient::head(const std::string& url) {
  std::string current = url;
  for (int hop = 0; hop < 10; ++hop) {
    HttpReply reply;
    Transfer t{.reply = &reply, .max_body = 0};
    impl_->prepare(current, t);
    curl_easy_setopt(impl_->curl, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(impl_->curl, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(impl_->options.request_timeout_ms));
    RECUR_ASSIGN_OR_RETURN(HttpReply r, impl_->perform(current, t));
    const std::string location = r.header("location");
    if (r.status < 300 || r.status >= 400 || !location.starts_with("/")) return r;
    // A relative redirect stays on the Hub (a renamed repository): follow it.
    const std::size_t scheme = current.find("://");
    const std::size_t path = current.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    current = current.substr(0, path) + location;
  }
  return Error(StatusCode::kIo, "{}: too many redirects", url);
}

Result<HttpReply> HttpClient::download(const std::string& url, std::int64_t offset,
                                       const std::function<void(long)>& on_start,
                                       const std::function<bool(std::string_view)>& sink) {
  HttpReply reply;
  Transfer t{.reply = &reply, .max_body = 64u << 10, .streaming = true};
  t.on_start = &on_start;
  t.sink = &sink;
  impl_->prepare(url, t);
  curl_easy_setopt(impl_->curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(impl_->curl, CURLOPT_MAXREDIRS, 10L);
  const std::string range = std::to_string(offset) + "-";
  if (offset > 0) curl_easy_setopt(impl_->curl, CURLOPT_RANGE, range.c_str());
  // Stalled: less than one byte a second for the stall timeout.
  curl_easy_setopt(impl_->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(impl_->curl, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(impl_->options.stall_timeout_ms / 1000)));
  return impl_->perform(url, t);
}

}  // namespace recur::hub
