#include "server/webui.h"

#include <string>

#include "server/embedded_files.h"

namespace recur::server {

namespace {

const EmbeddedFile* find_file(std::string_view name) {
  for (const EmbeddedFile& f : webui::files()) {
    if (f.path == name) return &f;
  }
  return nullptr;
}

std::string_view content_type_of(std::string_view name) {
  auto ends = [&](std::string_view ext) { return name.ends_with(ext); };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// If-None-Match: "*" or a comma-separated list of (possibly weak, W/"...") entity tags; a weak
// comparison is what RFC 9110 section 13.1.2 asks of GET.
bool etag_matches(std::string_view header, std::string_view etag) {
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string tag = trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    if (tag == "*") return true;
    if (tag.starts_with("W/")) tag.erase(0, 2);
    if (tag == etag) return true;
  }
  return false;
}

void add_common_headers(HttpResponse& r, std::string_view name, const std::string& etag) {
  r.headers.emplace_back("ETag", etag);
  // The files change only with the binary: a browser keeps them and revalidates each load, which
  // costs a 304 and never shows a stale page after an upgrade.
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (name.ends_with(".html")) {
    // Everything the page loads is its own; it connects only to this server (the API).
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; img-src 'self' data:; connect-src 'self'; "
                           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
  }
}

}  // namespace

HttpResponse webui_response(std::string_view name, const HttpRequest& req) {
  const EmbeddedFile* file = find_file(name);
  if (file == nullptr) {
    return HttpResponse::error(
        not_found("no file '" + std::string(name) + "' in the chat page", "unknown_route"));
  }
  const std::string etag = "\"" + std::string(file->sha256.substr(0, 32)) + "\"";
  HttpResponse r;
  r.content_type = std::string(content_type_of(name));
  add_common_headers(r, name, etag);
  if (etag_matches(req.header("if-none-match"), etag)) {
    r.status = 304;
    return r;
  }
  r.body = std::string(file->bytes);
  return r;
}

void register_webui(HttpServer& http) {
  http.get("/", [](const HttpRequest& r) { return webui_response("index.html", r); });
  http.allow_without_key("/");
  for (const EmbeddedFile& f : webui::files()) {
    if (f.path == "index.html") continue;
    const std::string route = "/webui/" + std::string(f.path);
    http.get(route, [name = f.path](const HttpRequest& r) { return webui_response(name, r); });
    http.allow_without_key(route);
  }
}

}  // namespace recur::server
