// Logit digests of every family against a recorded file (tests/model/digests.txt): the gate of a
// refactor that must not move a single bit. For each family preset, as stored in f32 and bf16,
// quantized on load to 4 and 8 bits, and as an MLX 4-bit checkpoint, on every ISA this CPU has:
// the xxHash3 of the logits of a one-shot prefill, of a prefill followed by decode steps, and of
// two sequences batched. Recorded on a machine with AVX-512 (no AMX): ISAs the file lacks are
// skipped. After a deliberate numeric change, rewrite the file with
//   RECUR_WRITE_DIGESTS=tests/model/digests.txt build/tests/model/model_digest_test
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "kernels/isa.h"
#include "model/model.h"
#include "test_util.h"
#include "util/hash.h"

namespace recur::model {
namespace {

using testing::TempDir;

struct Case {
  modelgen::Family family;
  const char* preset;
};

// Every family's tiny preset, and the presets that flip the flags tiny leaves off.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (modelgen::Family f : testing::kAllFamilies) out.push_back({f, "tiny"});
  out.push_back({modelgen::Family::kLlama, "tiny-bias"});
  out.push_back({modelgen::Family::kLfm2, "tiny-bias"});
  out.push_back({modelgen::Family::kFalconH1, "tiny-norm"});
  out.push_back({modelgen::Family::kGraniteHybrid, "tiny-groups"});
  out.push_back({modelgen::Family::kGraniteHybrid, "tiny-bias"});
  out.push_back({modelgen::Family::kNemotronH, "tiny-moe"});
  out.push_back({modelgen::Family::kSmolLm3, "tiny-list"});
  return out;
}

struct Variant {
  const char* name;
  modelgen::DType dtype;
  int mlx_bits;   // written quantized by the generator
  int load_bits;  // quantized on load
};
constexpr Variant kVariants[] = {{"f32", modelgen::DType::kF32, 0, 0},
                                 {"bf16", modelgen::DType::kBF16, 0, 0},
                                 {"bf16-q4", modelgen::DType::kBF16, 0, 4},
                                 {"bf16-q8", modelgen::DType::kBF16, 0, 8},
                                 {"mlx4", modelgen::DType::kBF16, 4, 0}};

constexpr int kTokens = 100;  // past two attention key blocks and gemma3 tiny's 16-token window

std::string hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void forward_digest(Model& m, ThreadPool& pool, SequenceState* seq,
                    std::span<const std::int32_t> tokens, Hasher& h) {
  SeqChunk c{.seq = seq, .tokens = tokens, .logits = LogitsWanted::kAll};
  auto r = m.forward(pool, {&c, 1});
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (r.is_ok()) h.update(r->data, static_cast<std::size_t>(r->n_rows * r->vocab_size) * 4);
}

// key -> digest for one loaded model on the active ISA.
void digests_of(Model& m, const std::string& key, std::map<std::string, std::string>* out) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> d(0, static_cast<std::int32_t>(m.vocab_size() - 1));
  std::vector<std::int32_t> a(kTokens), b(kTokens - 31);
  for (auto& t : a) t = d(rng);
  for (auto& t : b) t = d(rng);
  ThreadPool one(1), two(2);
  {
    Hasher h;
    auto seq = m.new_sequence();
    forward_digest(m, one, seq.get(), a, h);
    (*out)[key + " prefill"] = hex(h.digest());
  }
  {
    Hasher h;
    auto seq = m.new_sequence();
    forward_digest(m, two, seq.get(), std::span(a).first(37), h);
    for (std::size_t i = 37; i < a.size(); ++i) {
      forward_digest(m, two, seq.get(), std::span(a).subspan(i, 1), h);
    }
    (*out)[key + " decode"] = hex(h.digest());
  }
  {
    Hasher h;
    auto sa = m.new_sequence(), sb = m.new_sequence();
    SeqChunk c[2] = {{.seq = sa.get(), .tokens = a, .logits = LogitsWanted::kAll},
                     {.seq = sb.get(), .tokens = b, .logits = LogitsWanted::kAll}};
    auto r = m.forward(two, c);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    h.update(r->data, static_cast<std::size_t>(r->n_rows * r->vocab_size) * 4);
    (*out)[key + " batched"] = hex(h.digest());
  }
}

std::map<std::string, std::string> read_recorded(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto at = line.rfind(' ');
    if (at != std::string::npos) out[line.substr(0, at)] = line.substr(at + 1);
  }
  return out;
}

TEST(Digests, EveryFamilyGivesTheRecordedLogitBytes) {
  const char* write_to = std::getenv("RECUR_WRITE_DIGESTS");
  const auto recorded = read_recorded(std::string(RECUR_SOURCE_DIR) + "/tests/model/digests.txt");
  if (write_to == nullptr) {
    ASSERT_FALSE(recorded.empty()) << "tests/model/digests.txt is missing";
  }
  std::map<std::string, std::string> got;
  TempDir tmp("digests");
  int n = 0;
  for (const Case& c : cases()) {
    for (const Variant& v : kVariants) {
      if (v.mlx_bits != 0 && !testing::writes_mlx(c.family)) continue;
      const std::string name =
          std::string(modelgen::family_name(c.family)) + " " + c.preset + " " + v.name;
      SCOPED_TRACE(name);
      modelgen::GenSpec spec{.family = c.family,
                             .preset = c.preset,
                             .dtype = v.dtype,
                             .seed = 5,
                             .bits = v.mlx_bits,
                             .group_size = 32};
      const std::string dir = tmp.file("m" + std::to_string(n++));
      ASSERT_TRUE(modelgen::write_checkpoint(spec, dir).is_ok());
      auto loaded = Model::load(dir, {.max_batch_tokens = 2 * kTokens,
                                      .max_logit_rows = 2 * kTokens,
                                      .quantize_bits = v.load_bits,
                                      .quantize_group_size = 32});
      ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
      for (auto isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx2Vnni,
                       kernels::Isa::kAvx512, kernels::Isa::kAmx}) {
        if (!kernels::isa_supported(isa)) continue;
        ASSERT_TRUE(kernels::select_isa(isa).is_ok());
        digests_of(**loaded, name + " " + kernels::isa_name(isa), &got);
      }
      std::filesystem::remove_all(dir);
    }
  }
  ASSERT_TRUE(kernels::select_isa(kernels::Isa::kAuto).is_ok());
  if (write_to != nullptr) {
    std::ofstream out(write_to);
    out << "# family preset variant isa mode xxh3-of-logits (tests/model/digest_test.cc)\n";
    for (const auto& [key, digest] : got) out << key << " " << digest << "\n";
    ASSERT_TRUE(out.good()) << write_to;
    return;
  }
  int compared = 0;
  for (const auto& [key, digest] : got) {
    auto it = recorded.find(key);
    if (it == recorded.end()) {
      // Only ISAs the recording machine lacked may be missing.
      EXPECT_EQ(key.find(" scalar "), std::string::npos) << key << " is not recorded";
      continue;
    }
    ++compared;
    EXPECT_EQ(it->second, digest) << key;
  }
  for (const auto& [key, digest] : recorded) {
    std::string head = key.substr(0, key.rfind(' '));  // without the mode
    auto isa = kernels::parse_isa(head.substr(head.rfind(' ') + 1));
    ASSERT_TRUE(isa.is_ok()) << key;
    if (kernels::isa_supported(*isa)) {
      EXPECT_TRUE(got.contains(key)) << key << " was not computed";
    }
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace recur::model
