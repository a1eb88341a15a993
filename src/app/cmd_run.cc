// recur run: one completion through the real engine (no prompt cache), printed as it streams,
// then prefill and decode throughput.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "app/commands.h"
#include "app/runtime.h"
#include "app/settings.h"
#include "chat/formatter.h"
#include "engine/engine.h"
#include "util/log.h"
#include "util/progress.h"

namespace recur::app {

int cmd_run(const RunSettings& settings) {
  apply_memory_policy(settings.runtime);
  engine::EngineOptions eo = settings.engine;
  auto rt = load_runtime(settings.runtime, eo.prefill_chunk, 1);
  if (!rt) {
    log::error("recur run: {}", rt.status().message());
    return kExitFailure;
  }
  eo.ctx_size = resolve_context(eo.ctx_size, *rt->model);
  const std::string& prompt = settings.prompt;
  if (prompt.empty()) {
    log::error("recur run: no prompt: pass -p TEXT (--prompt, env RECUR_PROMPT)");
    return kExitUsage;
  }
  engine::GenerationRequest req;
  if (settings.chat) {
    // One user turn through the checkpoint's chat template, as the server would render it.
    auto formatter = chat::ChatFormatter::create(*rt->tokenizer);
    if (!formatter) {
      log::error("recur run --chat: {}", formatter.status().message());
      return kExitFailure;
    }
    chat::Message user;
    user.role = "user";
    user.content = prompt;
    std::vector<chat::Message> messages = {user};
    auto p = formatter->build_prompt({.messages = messages});
    if (!p) {
      log::error("recur run --chat: {}", p.status().message());
      return kExitFailure;
    }
    req.prompt = std::move(p->tokens);
  } else {
    req.prompt = rt->tokenizer->encode(prompt, {.parse_special = true});
  }
  req.max_tokens = settings.max_tokens;
  req.stop_token_ids = rt->stop_token_ids;
  req.sampling = settings.sampling;
  engine::Engine engine(eo, *rt->model, *rt->tokenizer, nullptr, *rt->pool);
  engine.start();
  auto t0 = std::chrono::steady_clock::now();
  const auto n_prompt_tokens = static_cast<std::int64_t>(req.prompt.size());
  auto channel = engine.submit(std::move(req));
  if (!channel) {
    log::error("recur run: {}", channel.status().message());
    return kExitFailure;
  }
  std::int64_t n_prompt = 0, n_generated = 0;
  double ttft = 0;
  engine::FinishReason finish = engine::FinishReason::kStop;
  // A long prompt's prefill shows its pace: the engine's count of prompt tokens computed, polled
  // until the first token arrives (quiet when that takes under a second).
  Progress prefill("prefill", n_prompt_tokens, ProgressUnit::kTokens);
  bool prefilling = true;
  for (;;) {
    auto ev = (*channel)->pop(std::chrono::milliseconds(prefilling ? 200 : 1000));
    if (prefilling) prefill.set(engine.stats().prefill_tokens);
    if (!ev) continue;
    if (prefilling) {
      prefill.finish();
      prefilling = false;
    }
    if (ev->ttft_s > 0) ttft = ev->ttft_s;
    std::fwrite(ev->text.data(), 1, ev->text.size(), stdout);
    std::fflush(stdout);
    if (ev->done) {
      if (ev->finish == engine::FinishReason::kError) {
        log::error("recur run: {}", ev->error.message());
        return kExitFailure;
      }
      n_prompt = ev->usage.prompt_tokens;
      n_generated = ev->usage.completion_tokens;
      finish = ev->finish;
      break;
    }
  }
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double decode_s = total - ttft;
  std::fprintf(stdout, "\n");
  std::fprintf(
      stderr,
      "prompt %lld tokens, %.1f tok/s prefill | generated %lld tokens, %.1f tok/s decode | "
      "finish %s\n",
      static_cast<long long>(n_prompt), ttft > 0 ? n_prompt / ttft : 0.0,
      static_cast<long long>(n_generated),
      n_generated > 1 && decode_s > 0 ? (n_generated - 1) / decode_s : 0.0,
      engine::finish_reason_name(finish));
  engine.stop();
  return kExitOk;
}

}  // namespace recur::app
