// Seed generator for scripts/fuzz.sh: writes the tiny generated checkpoint of each family (what
// `recur make-model --preset tiny` writes) under OUT_DIR/<family>, without building `recur` itself
// in the sanitizer build.
#include <cstdio>
#include <string>

#include "modelgen/generator.h"

int main(int argc, char** argv) {
  namespace mg = recur::modelgen;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds OUT_DIR\n");
    return 2;
  }
  for (mg::Family family : {mg::Family::kQwen3, mg::Family::kQwen3_5, mg::Family::kMamba2}) {
    mg::GenSpec spec{.family = family, .preset = "tiny"};
    std::string dir = std::string(argv[1]) + "/" + mg::family_name(family);
    recur::Status status = mg::write_checkpoint(spec, dir);
    if (!status.is_ok()) {
      std::fprintf(stderr, "fuzz_seeds: %s\n", status.message().c_str());
      return 1;
    }
  }
  return 0;
}
