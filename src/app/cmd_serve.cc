// recur serve: the HTTP API over one model. The listener comes up first (so /health can say
// "loading"), then the model, tokenizer, chat template, prompt cache and engine; SIGINT/SIGTERM
// drain: new requests get 503, running ones get a grace period, then the process exits 0.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "app/commands.h"
#include "app/runtime.h"
#include "app/serve_cache.h"
#include "chat/formatter.h"
#include "server/service.h"
#include "util/log.h"

namespace recur::app {

namespace {

server::HttpOptions http_options(const config::Options& opts) {
  int http_threads = static_cast<int>(opts.get_int("http-threads"));
  if (http_threads == 0) {
    http_threads = static_cast<int>(opts.get_int("parallel") + opts.get_int("max-queue") + 128);
  }
  return {.host = opts.get_string("host"),
          .port = static_cast<int>(opts.get_int("port")),
          .api_key = opts.get_string("api-key"),
          .body_limit_bytes = static_cast<std::size_t>(opts.get_size_bytes("body-limit-bytes")),
          .worker_threads = http_threads,
          .keep_alive_ms = opts.get_duration_ms("keep-alive-timeout"),
          .read_timeout_ms = opts.get_duration_ms("read-timeout"),
          .write_timeout_ms = opts.get_duration_ms("write-timeout")};
}

std::string model_id(const config::Options& opts) {
  if (!opts.get_string("served-model-name").empty()) return opts.get_string("served-model-name");
  std::filesystem::path p(opts.get_string("model"));
  std::string name = p.filename().string();
  if (name.empty()) name = p.parent_path().filename().string();
  return name.empty() ? "recur" : name;
}

// Waits for SIGINT/SIGTERM; meanwhile sweeps expired cache entries now and then.
void wait_for_signal(cache::PromptCache* cache) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  for (;;) {
    timespec timeout{.tv_sec = 30, .tv_nsec = 0};
    int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig == SIGINT || sig == SIGTERM) {
      log::info("received {}, draining", sig == SIGINT ? "SIGINT" : "SIGTERM");
      return;
    }
    if (cache != nullptr) cache->sweep();
  }
}

// Grace period: running and queued requests may finish while new ones get 503; a second signal
// or the deadline cancels what remains.
void drain(const engine::Engine& engine, std::chrono::milliseconds grace) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = engine.stats();
    if (s.active == 0 && s.queued == 0) return;
    timespec poll{.tv_sec = 0, .tv_nsec = 50'000'000};
    if (sigtimedwait(&set, nullptr, &poll) > 0) {
      log::info("second signal: cancelling {} running and {} queued requests", s.active, s.queued);
      return;
    }
  }
  auto s = engine.stats();
  if (s.active + s.queued > 0) {
    log::info("grace period over: cancelling {} running and {} queued requests", s.active,
              s.queued);
  }
}

}  // namespace

int cmd_serve(const config::Options& opts) {
  // Signals are taken by one thread with sigtimedwait; every thread started from here inherits
  // the mask. A client that vanishes must not kill the process with SIGPIPE.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  server::ServerMetrics metrics;
  const std::int64_t ctx = opts.get_int("ctx-size");
  server::Service service({.model_id = model_id(opts),
                           .ctx_size = ctx,
                           .warmup = opts.get_bool("prompt-cache-warmup"),
                           .log_prompts = opts.get_bool("log-prompts")},
                          metrics);
  server::HttpServer http(http_options(opts), metrics);
  service.register_routes(http);
  if (Status s = http.bind(); !s.is_ok()) {
    log::error("recur serve: {}", s.message());
    return kExitFailure;
  }
  std::thread listener([&] { http.serve(); });
  log::info("listening on http://{}:{} (model loading)", opts.get_string("host"), http.port());

  const std::int64_t parallel = opts.get_int("parallel");
  const std::int64_t chunk = opts.get_int("prefill-chunk");
  auto rt = load_runtime(opts, chunk + parallel, parallel);
  if (!rt) {
    log::error("recur serve: {}", rt.status().message());
    http.stop();
    listener.join();
    return kExitFailure;
  }
  std::unique_ptr<chat::ChatFormatter> formatter;
  if (auto f = chat::ChatFormatter::create(*rt->tokenizer); f.is_ok()) {
    formatter = std::make_unique<chat::ChatFormatter>(std::move(f).value());
  } else if (f.status().code() == StatusCode::kNotFound) {
    log::warn("no chat template: /v1/chat/completions is off ({})", f.status().message());
  } else {
    // A template that is there but broken is a broken checkpoint, not a text-only model.
    log::error("recur serve: {}: {}", opts.get_string("model"), f.status().message());
    http.stop();
    listener.join();
    return kExitFailure;
  }
  SteadyClock clock;
  auto cache = make_prompt_cache(opts, *rt->model, clock);
  engine::EngineOptions eo{.parallel = static_cast<int>(parallel),
                           .max_queue = static_cast<int>(opts.get_int("max-queue")),
                           .prefill_chunk = chunk,
                           .ctx_size = ctx,
                           .boundary_snapshots = opts.get_bool("prompt-cache-boundary"),
                           .warmup = opts.get_bool("prompt-cache-warmup")};
  engine::Engine engine(eo, *rt->model, *rt->tokenizer, cache.get(), *rt->pool);
  engine.start();
  service.set_backend({.engine = &engine,
                       .tokenizer = rt->tokenizer.get(),
                       .formatter = formatter.get(),
                       .cache = cache.get(),
                       .stop_token_ids = rt->stop_token_ids});
  log::info("ready: model={} parallel={} ctx={} prefill_chunk={} max_queue={}",
            opts.get_string("model"), parallel, ctx, chunk, eo.max_queue);

  wait_for_signal(cache.get());
  service.set_draining();
  drain(engine, std::chrono::milliseconds(opts.get_duration_ms("shutdown-grace")));
  engine.stop();
  http.stop();
  listener.join();
  log::info("stopped");
  return kExitOk;
}

}  // namespace recur::app
