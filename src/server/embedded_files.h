// Files compiled into the binary by cmake/embed_files.cmake (the chat page's HTML, CSS and
// scripts): their bytes and SHA-256, so they are served without a data directory on disk.
#pragma once

#include <span>
#include <string_view>

namespace recur::server {

struct EmbeddedFile {
  std::string_view path;    // relative to the embedded folder: "index.html", "app.js"
  std::string_view bytes;   // the file's contents
  std::string_view sha256;  // lowercase hex of the contents
};

}  // namespace recur::server

namespace recur::server::webui {

// The files of src/server/webui/ (generated: build/src/server/webui_files.cc).
std::span<const EmbeddedFile> files();

}  // namespace recur::server::webui
