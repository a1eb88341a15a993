// A file compiled into the binary by cmake/embed_files.cmake (the chat page, the generator's chat
// templates): its bytes and SHA-256, read without a data directory on disk.
#pragma once

#include <span>
#include <string_view>

namespace recur {

struct EmbeddedFile {
  std::string_view path;    // relative to the embedded folder: "index.html", "qwen3.jinja"
  std::string_view bytes;   // the file's contents
  std::string_view sha256;  // lowercase hex of the contents
};

}  // namespace recur
