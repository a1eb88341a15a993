// Serving memory is the mapped checkpoint plus the states: a loaded model that has run a forward
// (every matrix read, the lm_head whole) must hold no copy of its weights, neither on the heap
// nor as copy-on-write pages of the private mapping.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "model/model.h"
#include "test_util.h"

namespace recur::model {
namespace {

using testing::kAllFamilies;
using testing::TempDir;

// AddressSanitizer's shadow and quarantine add a few MB of anonymous memory of their own (3.8-5.8
// MB here); still far below a copy of these checkpoints (18 MB and up).
#if defined(__SANITIZE_ADDRESS__)
constexpr std::int64_t kToolBytes = std::int64_t{8} << 20;
#else
constexpr std::int64_t kToolBytes = 0;
#endif

// Bytes of heap in use (small chunks and mmapped ones), from glibc's own accounting: RSS alone
// would miss a copy placed in memory the allocator had already taken from the system.
std::int64_t heap_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<std::int64_t>(mi.uordblks + mi.hblkhd);
}

// Anonymous resident bytes of the process: heap, anonymous mappings and the copy-on-write pages
// of private file mappings (a write into the mapped checkpoint would land here).
std::int64_t anonymous_resident() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "Anonymous: %lld kB", &kb) == 1) return kb * 1024;
  }
  ADD_FAILURE() << "no Anonymous line in /proc/self/smaps_rollup";
  return 0;
}

// Resident bytes of this process's mappings of `file_part` (the shards), from smaps.
std::int64_t mapped_resident(const std::string& file_part) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  std::int64_t total = 0;
  while (std::getline(in, line)) {
    // Mapping headers start with an address range "lo-hi perms ..."; fields are "Name: value".
    const auto colon = line.find(':');
    const auto space = line.find(' ');
    if (space != std::string::npos && (colon == std::string::npos || colon > space)) {
      inside = line.find(file_part) != std::string::npos;
      continue;
    }
    long long kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %lld kB", &kb) == 1) total += kb * 1024;
  }
  return total;
}

TEST(Memory, WeightsAreReadFromTheMappingNotCopied) {
  TempDir tmp("memory");
  for (auto family : kAllFamilies) {
    for (auto dtype : {modelgen::DType::kBF16, modelgen::DType::kF32}) {
      const std::string name =
          std::string(modelgen::family_name(family)) + "_" + modelgen::dtype_name(dtype);
      SCOPED_TRACE(name);
      // A vocabulary large enough that the embedding dominates: a copy of it, or of the
      // matrices, could not hide under the scratch buffers.
      modelgen::GenSpec spec;
      spec.family = family;
      spec.dtype = dtype;
      spec.seed = 3;
      spec.layers = 2;
      spec.hidden_size = 256;
      spec.vocab_size = 32768;
      const std::string dir = tmp.file(name);
      ASSERT_TRUE(modelgen::write_checkpoint(spec, dir).is_ok());

      const std::int64_t heap0 = heap_in_use();
      const std::int64_t anon0 = anonymous_resident();
      const LoadOptions opts{.max_batch_tokens = 8, .max_logit_rows = 1};
      auto m = Model::load(dir, opts);
      ASSERT_TRUE(m.is_ok()) << m.status().to_string();
      auto seq = (*m)->new_sequence();
      ThreadPool pool(2);
      const std::vector<std::int32_t> tokens = {1, 2, 3, 4, 5};
      SeqChunk chunk{.seq = seq.get(), .tokens = tokens};
      ASSERT_TRUE((*m)->forward(pool, {&chunk, 1}).is_ok());

      const auto weights = static_cast<std::int64_t>((*m)->weight_bytes());
      ASSERT_GT(weights, std::int64_t{8} << 20);
      // What the model may own besides the mapping: scratch for 8 rows, one logits row, the f32
      // norm and conv vectors and one short sequence's state - well under a tenth here.
      EXPECT_LT(heap_in_use() - heap0, weights / 10);
      EXPECT_LT(anonymous_resident() - anon0, weights / 10 + kToolBytes);
      // ...and the forward really read the weights through the mapping: the lm_head alone
      // (the tied embedding or its own matrix) is a third of the checkpoint or more.
      EXPECT_GT(mapped_resident(dir), weights / 3);
    }
  }
}

}  // namespace
}  // namespace recur::model
