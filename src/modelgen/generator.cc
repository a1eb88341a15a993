// Orchestrates one checkpoint: geometry from the preset and overrides, the tokenizer, the config
// files and the safetensors shards, written into a temporary folder that is renamed into place.
#include "modelgen/generator.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "modelgen/families.h"
#include "modelgen/rng.h"
#include "modelgen/safetensors_writer.h"
#include "modelgen/tokenizer_gen.h"
#include "util/hash.h"
#include "util/mmap_file.h"
#include "util/thread_pool.h"

namespace recur::modelgen {

std::optional<Family> parse_family(std::string_view word) {
  if (word == "qwen3") return Family::kQwen3;
  if (word == "qwen3_5") return Family::kQwen3_5;
  if (word == "mamba2") return Family::kMamba2;
  return std::nullopt;
}

const char* family_name(Family family) {
  switch (family) {
    case Family::kQwen3:
      return "qwen3";
    case Family::kQwen3_5:
      return "qwen3_5";
    case Family::kMamba2:
      return "mamba2";
  }
  return "?";
}

namespace {

namespace fs = std::filesystem;

// Values of one block of one tensor, from an RNG seeded by (seed, tensor key, block): the same
// bytes whatever thread computes it.
void fill_block(const GenTensor& t, std::uint64_t seed, std::int64_t block_idx,
                std::span<float> out) {
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
      case InitKind::kDtBias: {
        const double log_lo = std::log(init.a), log_hi = std::log(init.b);
        const double dt = std::max(1e-4, std::exp(log_lo + (log_hi - log_lo) * rng.uniform()));
        x = dt + std::log(-std::expm1(-dt));  // softplus^-1(dt)
        break;
      }
    }
    v = static_cast<float>(x);
  }
}

struct TextFile {
  std::string name;
  std::string contents;
};

Status write_text(const fs::path& dir, const TextFile& f) {
  return write_file_atomic((dir / f.name).string(), f.contents);
}

// Refuses to replace a directory that holds something other than a checkpoint.
Status check_target(const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return Status::ok();
  if (!fs::is_directory(out, ec)) {
    return Error(StatusCode::kInvalidArgument, "--out {} exists and is not a directory",
                 out.string());
  }
  if (fs::is_empty(out, ec) || fs::exists(out / "config.json", ec)) return Status::ok();
  return Error(StatusCode::kInvalidArgument,
               "--out {} is a non-empty directory without config.json; refusing to replace it",
               out.string());
}

// Moves the finished temporary folder to out: the old checkpoint (if any) is moved aside first
// and removed after, so out is never half-written.
Status move_into_place(const fs::path& tmp, const fs::path& out) {
  std::error_code ec;
  const fs::path old =
      out.parent_path() / fmt::format(".{}.old-{}", out.filename().string(), ::getpid());
  const bool had_old = fs::exists(out, ec);
  if (had_old) {
    fs::rename(out, old, ec);
    if (ec) return Error(StatusCode::kIo, "moving {} aside: {}", out.string(), ec.message());
  }
  fs::rename(tmp, out, ec);
  if (ec)
    return Error(StatusCode::kIo, "renaming {} to {}: {}", tmp.string(), out.string(),
                 ec.message());
  if (had_old) fs::remove_all(old, ec);
  return Status::ok();
}

Status write_weights(const fs::path& dir, const std::vector<GenTensor>& table,
                     const std::vector<TensorEntry>& entries, const GenSpec& spec,
                     GenSummary& summary) {
  RECUR_ASSIGN_OR_RETURN(std::vector<ShardLayout> shards, plan_shards(entries, spec.shards));
  ThreadPool pool(available_cores());
  const FillFn fill = [&](std::size_t t, std::int64_t block, std::span<float> out) {
    fill_block(table[t], spec.seed, block, out);
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

Status write_into(const fs::path& dir, const GenSpec& spec, GenSummary& summary) {
  const BpeTokenizer& tok = generated_tokenizer();
  RECUR_ASSIGN_OR_RETURN(Geometry g, resolve_geometry(spec, tok.n_tokens()));
  const std::vector<GenTensor> table = tensor_table(g, spec.dtype);
  std::vector<TensorEntry> entries;
  for (const GenTensor& t : table) {
    entries.push_back(t.entry);
    summary.n_params += t.entry.n_elems();
  }
  const TextFile files[] = {
      {"config.json", config_json(g, spec.dtype, tok.ids)},
      {"generation_config.json", generation_config_json(g, tok.ids)},
      {"tokenizer.json", tokenizer_json(tok, spec.family)},
      {"tokenizer_config.json", tokenizer_config_json(tok, spec.family, g.max_position)},
  };
  for (const TextFile& f : files) {
    RECUR_RETURN_IF_ERROR(write_text(dir, f));
    summary.n_bytes += static_cast<std::int64_t>(f.contents.size());
    ++summary.n_files;
  }
  return write_weights(dir, table, entries, spec, summary);
}

}  // namespace

Status write_checkpoint(const GenSpec& spec, const std::string& out_dir, GenSummary* summary) {
  if (out_dir.empty()) return Error(StatusCode::kInvalidArgument, "no output directory given");
  if (spec.shards < 1) {
    return Error(StatusCode::kInvalidArgument, "shards must be >= 1, got {}", spec.shards);
  }
  std::error_code ec;
  fs::path out = fs::absolute(fs::path(out_dir), ec).lexically_normal();
  if (out.has_filename() == false) out = out.parent_path();
  RECUR_RETURN_IF_ERROR(check_target(out));
  fs::create_directories(out.parent_path(), ec);
  if (ec)
    return Error(StatusCode::kIo, "creating {}: {}", out.parent_path().string(), ec.message());
  const fs::path tmp =
      out.parent_path() / fmt::format(".{}.tmp-{}", out.filename().string(), ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) return Error(StatusCode::kIo, "creating {}: {}", tmp.string(), ec.message());
  GenSummary written;
  Status status = write_into(tmp, spec, written);
  if (status.is_ok()) status = move_into_place(tmp, out);
  if (!status.is_ok()) {
    fs::remove_all(tmp, ec);
    return status;
  }
  if (summary != nullptr) *summary = written;
  return Status::ok();
}

}  // namespace recur::modelgen
