// Test helper: renders a template file with a JSON context file and prints the result to stdout
// (or the error to stderr, exit 1). Drives the Jinja2 and @huggingface/jinja comparisons.
// Usage: template_render TEMPLATE.jinja CONTEXT.json [NOW_UNIX_SECONDS]
//        template_render --batch CASES.json   (array of {"template": path, "context": {...},
//        "now": seconds}; prints an array of {"ok", "out", "error"} in the same order)
//        template_render --repeat N TEMPLATE CONTEXT.json   (parse once, render N times, print
//        the mean render time in microseconds to stderr: the figure docs/templates.md quotes)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "template/template.h"

namespace {
bool read_file(const char* path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}
}  // namespace

int run_batch(const char* cases_path) {
  std::string text;
  if (!read_file(cases_path, text)) return 2;
  auto cases = nlohmann::ordered_json::parse(text, nullptr, false);
  if (cases.is_discarded() || !cases.is_array()) return 2;
  auto results = nlohmann::ordered_json::array();
  for (const auto& c : cases) {
    nlohmann::ordered_json r;
    std::string source;
    if (!read_file(c["template"].get<std::string>().c_str(), source)) return 2;
    recur::tmpl::RenderOptions options;
    if (c.contains("now")) options.now = c["now"].get<std::int64_t>();
    auto tmpl = recur::tmpl::Template::parse(source);
    auto context = recur::tmpl::value_from_json(c["context"].dump());
    if (!context.is_ok()) return 2;
    auto out =
        tmpl.is_ok() ? tmpl->render(*context, options) : recur::Result<std::string>(tmpl.status());
    r["ok"] = out.is_ok();
    r["out"] = out.is_ok() ? *out : "";
    r["error"] = out.is_ok() ? "" : out.status().message();
    results.push_back(std::move(r));
  }
  std::string dumped = results.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fwrite(dumped.data(), 1, dumped.size(), stdout);
  return 0;
}

int run_repeat(int n, const char* template_path, const char* context_path) {
  std::string source, context_text;
  if (n <= 0 || !read_file(template_path, source) || !read_file(context_path, context_text)) {
    return 2;
  }
  auto tmpl = recur::tmpl::Template::parse(source);
  auto context = recur::tmpl::value_from_json(context_text);
  if (!tmpl.is_ok() || !context.is_ok()) return 1;
  auto start = std::chrono::steady_clock::now();
  std::size_t n_bytes = 0;
  for (int i = 0; i < n; ++i) {
    auto out = tmpl->render(*context);
    if (!out.is_ok()) return 1;
    n_bytes += out->size();
  }
  std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
  std::fprintf(stderr, "%.1f us per render (%zu bytes)\n", elapsed.count() / n, n_bytes / n);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--batch") return run_batch(argv[2]);
  if (argc == 5 && std::string(argv[1]) == "--repeat") {
    return run_repeat(std::atoi(argv[2]), argv[3], argv[4]);
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TEMPLATE CONTEXT.json [NOW]\n", argv[0]);
    return 2;
  }
  std::string source, context_text;
  if (!read_file(argv[1], source) || !read_file(argv[2], context_text)) {
    std::fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
    return 2;
  }
  auto tmpl = recur::tmpl::Template::parse(source);
  if (!tmpl.is_ok()) {
    std::fprintf(stderr, "%s\n", tmpl.status().message().c_str());
    return 1;
  }
  auto context = recur::tmpl::value_from_json(context_text);
  if (!context.is_ok()) {
    std::fprintf(stderr, "%s\n", context.status().message().c_str());
    return 2;
  }
  recur::tmpl::RenderOptions options;
  if (argc > 3) options.now = std::atoll(argv[3]);
  auto out = tmpl->render(*context, options);
  if (!out.is_ok()) {
    std::fprintf(stderr, "%s\n", out.status().message().c_str());
    return 1;
  }
  std::fwrite(out->data(), 1, out->size(), stdout);
  return 0;
}
