// Orchestrates one checkpoint: geometry from the preset and overrides, the tokenizer, the config
// files and the safetensors shards (Hugging Face layout, or MLX quantized when spec.bits != 0),
// written into a temporary folder that is renamed into place.
#include "modelgen/generator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "convert/mlx_layout.h"
#include "convert/mlx_plan.h"
#include "convert/mlx_writer.h"
#include "convert/output_dir.h"
#include "convert/safetensors_writer.h"
#include "modelgen/families.h"
#include "modelgen/rng.h"
#include "modelgen/tokenizer_gen.h"
#include "util/hash.h"
#include "util/mmap_file.h"
#include "util/progress.h"
#include "util/thread_pool.h"

namespace recur::modelgen {

// The writers the generator shares with recur quantize.
using convert::add_quantization_config, convert::check_quant_format, convert::FillFn,
    convert::HfTensor, convert::index_json, convert::InputReadFn, convert::mlx_overrides,
    convert::mlx_rules_for, convert::MlxPlan, convert::MlxRules, convert::MlxWriteSummary,
    convert::OutputDir, convert::plan_mlx, convert::plan_shards, convert::read_planned,
    convert::ShardLayout, convert::SourceReadFn, convert::write_mlx_weights, convert::write_shard,
    convert::kBlockElems;

namespace {

namespace fs = std::filesystem;

// GenSpec::eos_bias as it applies to the embedding and head rows.
struct EosBias {
  double bias = 0;
  std::int64_t token = -1;  // the end-of-turn token
};
constexpr double kEosChannel = 2.0;  // 8 standard deviations of an embedding value at d = 64

bool is_head_or_embedding(const GenTensor& t) {
  const std::string& n = t.entry.name;
  return t.entry.shape.size() == 2 && (n == "lm_head.weight" || n.ends_with("embed_tokens.weight"));
}

// Values of one block of one tensor, from an RNG seeded by (seed, tensor key, block): the same
// bytes whatever thread computes it.
void fill_block(const GenTensor& t, std::uint64_t seed, std::int64_t block_idx,
                std::span<float> out, const EosBias& eos = {}) {
  Rng rng(hash_combine(hash64(t.key, seed), static_cast<std::uint64_t>(block_idx)));
  const Init& init = t.init;
  for (float& v : out) {
    double x = 0.0;
    switch (init.kind) {
      case InitKind::kNormal:
        x = init.b == 0.0 ? init.a : init.a + init.b * rng.normal();
        break;
      case InitKind::kLogUniform:
        x = std::log(init.a + (init.b - init.a) * rng.uniform());
        break;
      case InitKind::kUniformInt:
        x = std::floor(init.a + (init.b - init.a + 1.0) * rng.uniform());
        break;
      case InitKind::kDtBias: {
        const double log_lo = std::log(init.a), log_hi = std::log(init.b);
        const double dt = std::max(1e-4, std::exp(log_lo + (log_hi - log_lo) * rng.uniform()));
        x = dt + std::log(-std::expm1(-dt));  // softplus^-1(dt)
        break;
      }
    }
    v = static_cast<float>(x);
  }
  if (eos.bias <= 0 || !is_head_or_embedding(t)) return;
  const std::int64_t cols = t.entry.shape[1];
  const std::int64_t first = block_idx * kBlockElems;
  for (std::int64_t i = 0; i < std::ssize(out); ++i) {
    const std::int64_t e = first + i;
    if (e % cols != 0) continue;
    const bool end_of_turn = e / cols == eos.token;
    out[static_cast<std::size_t>(i)] =
        static_cast<float>(kEosChannel + (end_of_turn ? eos.bias : 0));
  }
}

struct TextFile {
  std::string name;
  std::string contents;
};

Status write_text(const fs::path& dir, const TextFile& f) {
  return write_file_atomic((dir / f.name).string(), f.contents);
}

Status write_weights(const fs::path& dir, const std::vector<GenTensor>& table,
                     const std::vector<TensorEntry>& entries, const GenSpec& spec,
                     const EosBias& eos, GenSummary& summary) {
  RECUR_ASSIGN_OR_RETURN(std::vector<ShardLayout> shards, plan_shards(entries, spec.shards));
  ThreadPool pool(available_cores());
  std::int64_t total_bytes = 0;
  for (const ShardLayout& shard : shards) total_bytes += shard.file_bytes();
  // The pace in bytes written (blocks are filled on the pool: Progress is thread-safe).
  Progress progress("writing the weights", total_bytes, ProgressUnit::kBytes);
  const FillFn fill = [&](std::size_t t, std::int64_t block, std::span<float> out) {
    fill_block(table[t], spec.seed, block, out, eos);
    progress.add(static_cast<std::int64_t>(out.size()) * entries[t].elem_bytes());
  };
  for (const ShardLayout& shard : shards) {
    RECUR_RETURN_IF_ERROR(
        write_shard((dir / shard.file_name).string(), shard, entries, fill, pool));
    summary.n_bytes += shard.file_bytes();
    ++summary.n_files;
  }
  if (shards.size() > 1) {
    const TextFile index{"model.safetensors.index.json", index_json(entries, shards)};
    RECUR_RETURN_IF_ERROR(write_text(dir, index));
    summary.n_bytes += static_cast<std::int64_t>(index.contents.size());
    ++summary.n_files;
  }
  return Status::ok();
}

// f32 values [begin, begin + out.size()) of a generated tensor: the blocks that hold them are
// generated whole, so the values are those of the unquantized checkpoint.
void read_generated(const GenTensor& t, std::uint64_t seed, const EosBias& eos, std::int64_t begin,
                    std::span<float> out) {
  thread_local std::vector<float> block;
  const std::int64_t end = begin + static_cast<std::int64_t>(out.size());
  for (std::int64_t at = begin; at < end;) {
    const std::int64_t block_idx = at / kBlockElems, block_begin = block_idx * kBlockElems;
    block.resize(static_cast<std::size_t>(std::min(kBlockElems, t.entry.n_elems() - block_begin)));
    fill_block(t, seed, block_idx, block, eos);
    const std::int64_t stop = std::min(end, block_begin + std::ssize(block));
    std::copy(block.begin() + (at - block_begin), block.begin() + (stop - block_begin),
              out.begin() + (at - begin));
    at = stop;
  }
}

// The same tensors as an MLX quantized checkpoint, planned by the rules quantize_checkpoint
// follows (mlx_plan.h): experts stacked or split into switch_mlp as mlx-lm's sanitize does.
MlxPlan plan_generated(const std::vector<GenTensor>& table, const MlxRules& rules) {
  std::vector<HfTensor> inputs;
  inputs.reserve(table.size());
  for (const GenTensor& t : table) {
    inputs.push_back({.name = t.entry.name, .shape = t.entry.shape, .dtype = t.entry.dtype});
  }
  return plan_mlx(rules, inputs);
}

Status write_mlx(const fs::path& dir, const std::vector<GenTensor>& table, const MlxPlan& plan,
                 const GenSpec& spec, const EosBias& eos, GenSummary& summary) {
  const InputReadFn read_input = [&](std::size_t i, std::int64_t begin, std::span<float> out) {
    read_generated(table[i], spec.seed, eos, begin, out);
  };
  const SourceReadFn read = [&](std::size_t t, std::int64_t begin, std::span<float> out) {
    read_planned(plan, t, begin, out, read_input);
  };
  MlxWriteSummary written;
  RECUR_RETURN_IF_ERROR(write_mlx_weights(dir.string(), plan.tensors, read, spec.shards, &written));
  summary.n_params = written.n_params;
  summary.n_bytes += written.n_bytes;
  summary.n_files += written.n_files;
  return Status::ok();
}

Status write_into(const fs::path& dir, const GenSpec& spec, GenSummary& summary) {
  // Gemma's tokenizer is SentencePiece-style, LFM2's has its added tokens first; the other
  // families' are byte-level BPEs with the added tokens last.
  const FamilyFiles* own = family_record(spec.family).files;
  if (spec.bits != 0 && spec.family == Family::kGptOss) {
    return Error(StatusCode::kUnimplemented,
                 "--bits: gpt_oss checkpoints are written as released (MXFP4 experts, the rest "
                 "bf16); serve --quantize quantizes the rest at load");
  }
  const bool sentencepiece = spec.family == Family::kGemma3;
  const bool lfm2 = spec.family == Family::kLfm2 || spec.family == Family::kLfm2Moe;
  const SpTokenizer* sp = sentencepiece ? &generated_sp_tokenizer() : nullptr;
  const Lfm2Tokenizer* lt = lfm2 ? &lfm2_tokenizer(spec.preset) : nullptr;
  const BpeTokenizer* bpe = sentencepiece || lfm2 ? nullptr
                            : own != nullptr      ? &own->tokenizer(spec.preset)
                                                  : &family_tokenizer(spec.family, spec.preset);
  const SpecialIds& ids = sentencepiece ? sp->ids : lfm2 ? lt->ids : bpe->ids;
  const int n_tokens = sentencepiece ? sp->n_tokens() : lfm2 ? lt->n_tokens() : bpe->n_tokens();
  RECUR_ASSIGN_OR_RETURN(Geometry g, resolve_geometry(spec, n_tokens));
  RECUR_ASSIGN_OR_RETURN(const std::vector<GenTensor> table, tensor_table(g, spec.dtype));
  std::vector<TensorEntry> entries;
  for (const GenTensor& t : table) {
    entries.push_back(t.entry);
    summary.n_params += t.entry.n_elems();
  }
  std::string config = config_json(g, spec.dtype, ids);
  MlxPlan mlx;
  if (spec.bits != 0) {
    RECUR_ASSIGN_OR_RETURN(
        const MlxRules rules,
        mlx_rules_for(family_record(spec.family).model_type, g.n_experts > 0, g.tied,
                      {.bits = spec.bits, .group_size = spec.group_size}));
    mlx = plan_generated(table, rules);
    RECUR_ASSIGN_OR_RETURN(
        config, add_quantization_config(config, rules.format, mlx_overrides(mlx.tensors)));
  }
  std::vector<TextFile> files = {
      {"config.json", std::move(config)},
      {"generation_config.json", generation_config_json(g, ids)},
      {"tokenizer.json", sentencepiece    ? sp_tokenizer_json(*sp)
                         : lfm2           ? lfm2_tokenizer_json(*lt)
                         : own != nullptr ? own->tokenizer_json(*bpe)
                                          : tokenizer_json(*bpe, spec.family)},
      {"tokenizer_config.json", sentencepiece ? sp_tokenizer_config_json(*sp, g.max_position)
                                : lfm2        ? lfm2_tokenizer_config_json(*lt, g.max_position)
                                : own != nullptr
                                    ? own->tokenizer_config_json(*bpe, g.max_position)
                                    : tokenizer_config_json(*bpe, spec.family, g.max_position)},
  };
  if (own != nullptr) files.push_back({"chat_template.jinja", chat_template(own->chat_template)});
  for (const TextFile& f : files) {
    RECUR_RETURN_IF_ERROR(write_text(dir, f));
    summary.n_bytes += static_cast<std::int64_t>(f.contents.size());
    ++summary.n_files;
  }
  // Llama 3 ends a turn with <|eot_id|>; the other families with their <|im_end|> (Gemma's
  // <end_of_turn>).
  const EosBias eos{.bias = spec.eos_bias, .token = ids.eot != 0 ? ids.eot : ids.im_end};
  if (spec.bits != 0) return write_mlx(dir, table, mlx, spec, eos, summary);
  return write_weights(dir, table, entries, spec, eos, summary);
}

}  // namespace

Status write_checkpoint(const GenSpec& spec, const std::string& out_dir, GenSummary* summary) {
  if (out_dir.empty()) return Error(StatusCode::kInvalidArgument, "no output directory given");
  if (spec.shards < 1) {
    return Error(StatusCode::kInvalidArgument, "shards must be >= 1, got {}", spec.shards);
  }
  if (spec.bits != 0) RECUR_RETURN_IF_ERROR(check_quant_format(spec.bits, spec.group_size));
  RECUR_ASSIGN_OR_RETURN(OutputDir out, OutputDir::begin(out_dir));
  GenSummary written;
  RECUR_RETURN_IF_ERROR(write_into(out.tmp(), spec, written));
  RECUR_RETURN_IF_ERROR(out.commit());
  if (summary != nullptr) *summary = written;
  return Status::ok();
}

}  // namespace recur::modelgen
