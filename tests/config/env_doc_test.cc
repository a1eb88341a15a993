// docs/environment-variables.md must be exactly what the option table renders.
#include <gtest/gtest.h>

#include "config/options.h"
#include "config/options_table.h"
#include "util/mmap_file.h"

namespace recur::config {
namespace {

TEST(EnvDoc, MatchesTheTable) {
  auto doc = read_file(std::string(RECUR_SOURCE_DIR) + "/docs/environment-variables.md");
  ASSERT_TRUE(doc.is_ok()) << doc.status().to_string();
  EXPECT_EQ(*doc, render_env_markdown())
      << "docs/environment-variables.md is stale: regenerate it with "
         "`build/bin/recur config-doc > docs/environment-variables.md`";
}

TEST(EnvDoc, NamesEveryOptionAndVariable) {
  std::string doc = render_env_markdown();
  for (const auto& spec : all_options()) {
    EXPECT_NE(doc.find("`--" + std::string(spec.name) + "`"), std::string::npos) << spec.name;
    EXPECT_NE(doc.find("`" + env_name(spec.name) + "`"), std::string::npos) << spec.name;
  }
}

}  // namespace
}  // namespace recur::config
