// The JSON Schema Test Suite (npm json-schema-test-suite, draft 4) against the compiler: for every
// schema it compiles strictly, no instance the suite calls invalid may be accepted by the
// grammar (soundness: a reply generated under the schema always validates). Valid instances may
// be refused (the grammar fixes key order and whitespace, and absent additionalProperties means
// false); how many are accepted is reported. Number bounds are approximated (docs/json-schema.md):
// a number written with a fraction point past a bound is the one accepted invalid instance
// allowed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace recur::grammar {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

bool has_number_bound(const Json& schema) {
  if (schema.is_object()) {
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (schema.contains(k)) return true;
    }
    for (const auto& [k, v] : schema.items()) {
      if (has_number_bound(v)) return true;
    }
  } else if (schema.is_array()) {
    for (const auto& v : schema) {
      if (has_number_bound(v)) return true;
    }
  }
  return false;
}

bool float_number(const Json& data) { return data.is_number_float(); }

TEST(SchemaSuite, NoInvalidInstanceIsAccepted) {
  const fs::path dir =
      fs::path(RECUR_SOURCE_DIR) / "tests/node/node_modules/json-schema-test-suite/tests/draft4";
  if (!fs::exists(dir))
    GTEST_SKIP() << "npm json-schema-test-suite is not installed (scripts/setup.sh)";
  int schemas = 0, compiled = 0, valid = 0, valid_accepted = 0, invalid = 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const Json cases = Json::parse(text.str());
    for (const Json& c : cases) {
      ++schemas;
      auto out = json_schema_to_gbnf(c["schema"]);
      if (!out.is_ok()) continue;
      auto g = parse_gbnf(out->gbnf);
      if (!g.is_ok()) {
        EXPECT_NE(g.status().message().find("left-recursive"), std::string::npos)
            << file.filename() << " / " << c["description"] << ": " << g.status().message();
        continue;
      }
      ++compiled;
      for (const Json& t : c["tests"]) {
        const std::string data = t["data"].dump();
        const bool ok = accepts(**g, data);
        if (t["valid"].get<bool>()) {
          ++valid;
          valid_accepted += ok;
        } else {
          ++invalid;
          if (ok && has_number_bound(c["schema"]) && float_number(t["data"])) continue;
          EXPECT_FALSE(ok) << file.filename().string() << " / " << c["description"] << " / "
                           << t["description"] << ": accepted " << data;
        }
      }
    }
  }
  std::printf(
      "schema suite: %d of %d schemas compile strictly; %d of %d valid instances "
      "accepted as written; %d invalid instances rejected\n",
      compiled, schemas, valid_accepted, valid, invalid);
  EXPECT_GT(compiled, schemas / 3);
}

}  // namespace
}  // namespace recur::grammar
