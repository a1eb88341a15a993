// Shard discovery: the index's weight_map is authoritative when present (real shard names vary,
// e.g. model.safetensors-00001-of-00001.safetensors); otherwise every *.safetensors in the folder.
#include "model/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "util/hash.h"

namespace recur::model {

namespace fs = std::filesystem;

namespace {

Result<std::vector<std::string>> shards_from_index(const std::string& index_path,
                                                   std::map<std::string, std::string>* weight_map) {
  RECUR_ASSIGN_OR_RETURN(std::string text, read_file(index_path));
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
      !j["weight_map"].is_object()) {
    return Error(StatusCode::kInvalidArgument, "{}: expected a JSON object with a weight_map",
                 index_path);
  }
  std::set<std::string> files;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string()) {
      return Error(StatusCode::kInvalidArgument, "{}: weight_map entry '{}' is not a file name",
                   index_path, tensor);
    }
    std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "..") {
      return Error(StatusCode::kInvalidArgument, "{}: weight_map entry '{}' names bad file '{}'",
                   index_path, tensor, f);
    }
    (*weight_map)[tensor] = f;
    files.insert(f);
  }
  return std::vector<std::string>(files.begin(), files.end());
}

std::vector<std::string> shards_by_glob(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".safetensors") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void append_unique(std::vector<std::int64_t>* ids, const std::vector<std::int64_t>& more) {
  for (auto id : more) {
    if (std::find(ids->begin(), ids->end(), id) == ids->end()) ids->push_back(id);
  }
}

}  // namespace

Result<Checkpoint> Checkpoint::open(const std::string& dir) {
  Checkpoint ck;
  ck.dir_ = dir;
  const std::string config_path = (fs::path(dir) / "config.json").string();
  auto config_text = read_file(config_path);
  if (!config_text.is_ok()) {
    return Error(StatusCode::kNotFound, "{} is not a checkpoint: cannot read config.json ({})", dir,
                 config_text.status().message());
  }
  RECUR_ASSIGN_OR_RETURN(ck.config_, ConfigJson::parse(*config_text, config_path));
  RECUR_ASSIGN_OR_RETURN(auto config_eos, ck.config_.get_int_list("eos_token_id"));
  append_unique(&ck.eos_ids_, config_eos);
  const std::string gen_path = (fs::path(dir) / "generation_config.json").string();
  if (fs::exists(gen_path)) {
    RECUR_ASSIGN_OR_RETURN(std::string gen_text, read_file(gen_path));
    RECUR_ASSIGN_OR_RETURN(auto gen_eos, parse_generation_config_eos(gen_text, gen_path));
    append_unique(&ck.eos_ids_, gen_eos);
  }

  std::map<std::string, std::string> weight_map;
  std::vector<std::string> shards;
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  if (fs::exists(index_path)) {
    RECUR_ASSIGN_OR_RETURN(shards, shards_from_index(index_path, &weight_map));
  } else {
    shards = shards_by_glob(dir);
  }
  if (shards.empty()) {
    return Error(StatusCode::kNotFound, "{}: no *.safetensors files (and no usable index)", dir);
  }
  for (const auto& s : shards) RECUR_RETURN_IF_ERROR(ck.add_shard((fs::path(dir) / s).string()));
  for (const auto& [tensor, file] : weight_map) {
    const TensorInfo* t = ck.find(tensor);
    if (t == nullptr || fs::path(t->file).filename() != file) {
      return Error(StatusCode::kDataLoss, "{}: the index places tensor '{}' in {}, which lacks it",
                   index_path, tensor, file);
    }
  }
  ck.compute_content_hash();
  return ck;
}

Status Checkpoint::add_shard(const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  files_.push_back(std::make_unique<MappedFile>(std::move(file)));
  RECUR_ASSIGN_OR_RETURN(SafetensorsHeader header, parse_safetensors(files_.back()->bytes(), path));
  headers_.push_back(std::make_unique<SafetensorsHeader>(std::move(header)));
  if (headers_.back()->format == "mlx") mlx_format_ = true;
  for (const TensorInfo& t : headers_.back()->tensors) {
    auto [it, inserted] = by_name_.emplace(t.name, &t);
    if (!inserted) {
      return Error(StatusCode::kDataLoss, "tensor '{}' appears in both {} and {}", t.name,
                   it->second->file, path);
    }
  }
  return Status::ok();
}

const TensorInfo* Checkpoint::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& [name, t] : by_name_) out.push_back(name);
  return out;
}

std::size_t Checkpoint::n_weight_bytes() const {
  std::size_t n = 0;
  for (const auto& [name, t] : by_name_) n += t->n_bytes;
  return n;
}

// Headers alone do not tell two seeds of one geometry apart, so a few bytes at three places of
// every tensor join the hash; reading them touches 3 pages per tensor, not the whole checkpoint.
void Checkpoint::compute_content_hash() {
  Hasher h(0x7265637572ull);
  h.update(config_.canonical());
  for (const auto& [name, t] : by_name_) {
    h.update(name);
    h.update(t->dtype_text);
    h.update(t->shape.data(), t->shape.size() * sizeof(std::int64_t));
    constexpr std::size_t kSample = 64;
    for (std::size_t at : {std::size_t{0}, t->n_bytes / 2, t->n_bytes}) {
      std::size_t begin = at >= kSample ? std::min(at, t->n_bytes) - kSample : 0;
      std::size_t end = std::min(begin + kSample, t->n_bytes);
      h.update(t->data + begin, end - begin);
    }
  }
  content_hash_ = h.digest();
}

}  // namespace recur::model
