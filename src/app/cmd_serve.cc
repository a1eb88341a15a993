// recur serve: the HTTP API over one model. The listener comes up first (so /health can say
// "loading"), then the model, tokenizer, chat template, prompt cache and engine; SIGINT/SIGTERM
// drain: new requests get 503, running ones get a grace period, then the process exits 0.
#include <signal.h>

#include <chrono>
#include <thread>

#include "app/commands.h"
#include "app/runtime.h"
#include "app/serve_cache.h"
#include "app/settings.h"
#include "chat/formatter.h"
#include "server/service.h"
#include "server/webui.h"
#include "util/log.h"

namespace recur::app {

namespace {

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

int cmd_serve(const ServeSettings& settings) {
  apply_memory_policy(settings.runtime);
  // Signals are taken by one thread with sigtimedwait; every thread started from here inherits
  // the mask. A client that vanishes must not kill the process with SIGPIPE.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (Status s = server::check_template_kwargs(settings.service.default_template_kwargs);
      !s.is_ok()) {
    log::error("recur serve: {}", s.message());
    return kExitUsage;
  }
  server::ServerMetrics metrics;
  server::Service service(settings.service, metrics);
  server::HttpServer http(settings.http, metrics);
  service.register_routes(http);
  if (settings.webui) server::register_webui(http);
  if (Status s = http.bind(); !s.is_ok()) {
    log::error("recur serve: {}", s.message());
    return kExitFailure;
  }
  std::thread listener([&] { http.serve(); });
  log::info("listening on http://{}:{} (model loading)", settings.http.host, http.port());

  engine::EngineOptions eo = settings.engine;
  auto rt = load_runtime(settings.runtime, eo.prefill_chunk + eo.parallel, eo.parallel);
  if (!rt) {
    log::error("recur serve: {}", rt.status().message());
    http.stop();
    listener.join();
    return kExitFailure;
  }
  eo.ctx_size = resolve_context(eo.ctx_size, *rt->model);
  std::unique_ptr<chat::ChatFormatter> formatter;
  if (auto f = chat::ChatFormatter::create(*rt->tokenizer); f.is_ok()) {
    formatter = std::make_unique<chat::ChatFormatter>(std::move(f).value());
    log::info("chat template caps: {}", formatter->caps().to_string());
  } else if (f.status().code() == StatusCode::kNotFound) {
    log::warn("no chat template: /v1/chat/completions is off ({})", f.status().message());
  } else {
    // A template that is there but broken is a broken checkpoint, not a text-only model.
    log::error("recur serve: {}: {}", settings.runtime.model_dir, f.status().message());
    http.stop();
    listener.join();
    return kExitFailure;
  }
  SteadyClock clock;
  auto made_cache = make_prompt_cache(settings.prompt_cache, eo.ctx_size, *rt->model, clock);
  if (!made_cache.is_ok()) {
    log::error("recur serve: {}", made_cache.status().message());
    http.stop();
    listener.join();
    return kExitFailure;
  }
  std::unique_ptr<cache::PromptCache> cache = std::move(*made_cache);
  engine::Engine engine(eo, *rt->model, *rt->tokenizer, cache.get(), *rt->pool);
  engine.start();
  service.set_backend({.engine = &engine,
                       .tokenizer = rt->tokenizer.get(),
                       .formatter = formatter.get(),
                       .cache = cache.get(),
                       .stop_token_ids = rt->stop_token_ids});
  log::info("ready: model={} parallel={} ctx={} prefill_chunk={} max_queue={}",
            settings.runtime.model_dir, eo.parallel, eo.ctx_size, eo.prefill_chunk, eo.max_queue);
  if (settings.webui) log::info("chat page: http://{}:{}/", settings.http.host, http.port());

  wait_for_signal(cache.get());
  service.set_draining();
  drain(engine, settings.shutdown_grace);
  engine.stop();
  http.stop();
  listener.join();
  log::info("stopped");
  return kExitOk;
}

}  // namespace recur::app
