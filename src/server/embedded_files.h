// The chat page's HTML, CSS and scripts, compiled into the binary by cmake/embed_files.cmake, so
// they are served without a data directory on disk.
#pragma once

#include <span>

#include "util/embedded_file.h"

namespace recur::server {

using recur::EmbeddedFile;

}  // namespace recur::server

namespace recur::server::webui {

// The files of src/server/webui/ (generated: build/src/server/webui_files.cc).
std::span<const EmbeddedFile> files();

}  // namespace recur::server::webui
