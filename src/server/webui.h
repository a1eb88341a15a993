// The browser chat page that `recur serve` offers at / (off with --no-webui): static files compiled
// into the binary, served with their content types, validators and security headers. The page is
// a client like any other: it talks to the server only through the public /v1 routes.
#pragma once

#include <string_view>

#include "server/http_server.h"

namespace recur::server {

// GET / (index.html) and GET /webui/NAME for every other embedded file. None needs the API key:
// the files hold no data, and the page asks for the key and sends it with its API calls.
void register_webui(HttpServer& http);

// The response for the embedded file NAME ("index.html", "app.js"): 200 with the file, 304 when
// the request's If-None-Match already names its ETag, 404 for a name not embedded.
HttpResponse webui_response(std::string_view name, const HttpRequest& req);

}  // namespace recur::server
