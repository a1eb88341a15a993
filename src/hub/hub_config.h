// Where the Hugging Face Hub is and how to reach it, read from the environment variables that
// huggingface_hub reads (HF_ENDPOINT, HF_HOME, HF_HUB_CACHE, HF_TOKEN, HF_HUB_OFFLINE, ...), so
// recur and Python tools share one cache and one login. Not the download itself (pull.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace recur::hub {

struct HubConfig {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT, without a trailing '/'
  std::string cache_dir;                            // HF_HUB_CACHE (models--org--name/ inside)
  std::string token;                                // HF_TOKEN or the token file; "" = anonymous
  std::string token_source;                         // where the token came from, for messages
  bool offline = false;                             // HF_HUB_OFFLINE: only the cache, no request
  std::int64_t request_timeout_ms = 10000;          // HF_HUB_ETAG_TIMEOUT: metadata requests
  std::int64_t stall_timeout_ms =
      60000;  // HF_HUB_DOWNLOAD_TIMEOUT (at least): no byte for this long
};

// Looks up one environment variable (null when unset): std::getenv, or a map in tests.
using EnvLookup = std::function<const char*(const char*)>;

// The configuration huggingface_hub would use in this environment. Fails only on a token file
// that exists but cannot be read, or a timeout that is not a number.
Result<HubConfig> hub_config_from_env(const EnvLookup& env);

// "org/name" as the Hub spells repository ids: two parts of letters, digits, '-', '_', '.', not
// starting or ending with '-' or '.', no "--" or "..", at most 96 characters.
bool is_repo_id(std::string_view text);

// "main", "v1.0", "refs/pr/1" or a commit hash: no empty segment, no "..", no control characters.
bool is_revision(std::string_view text);

// A 40-digit lowercase hexadecimal commit hash.
bool is_commit_hash(std::string_view text);

}  // namespace recur::hub
