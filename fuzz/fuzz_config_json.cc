// libFuzzer target: config.json into a family's typed config (qwen3, qwen3_5, mamba2) and the
// state layout and snapshot sizes the cache budgets take from it; generation_config.json's eos ids.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config_json.h"
#include "model/model.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto config = recur::model::ConfigJson::parse(text, "config.json");
  if (config.is_ok()) {
    // The typed readers on the keys every family reads, whatever their JSON types.
    for (const char* key : {"hidden_size", "num_hidden_layers", "vocab_size", "rope_theta",
                            "rms_norm_eps", "layer_types", "eos_token_id", "time_step_limit",
                            "tie_word_embeddings", "rope_parameters.rope_theta"}) {
      (void)config->has(key);
      (void)config->get_int(key);
      (void)config->get_int(key, 7);
      (void)config->get_float(key);
      (void)config->get_float(key, 0.5);
      (void)config->get_bool(key, false);
      (void)config->get_string(key);
      (void)config->get_strings(key);
      (void)config->get_floats(key);
      (void)config->get_int_list(key);
    }
    (void)config->model_type();
    (void)config->canonical();
  } else {
    RECUR_CHECK(!config.status().message().empty());
  }
  auto layout = recur::model::state_layout_from_config(text);
  if (layout.is_ok()) {
    for (std::int64_t n_tokens : {0, 1, 4096}) {
      auto bytes = recur::model::snapshot_bytes_from_config(text, n_tokens);
      RECUR_CHECK(bytes.is_ok() && *bytes >= 0);
    }
  } else {
    RECUR_CHECK(!layout.status().message().empty());
  }
  (void)recur::model::parse_generation_config_eos(text, "generation_config.json");
  return 0;
}
