// tokenizer.json -> Model: the BPE model, added tokens, normalizer, pre-tokenizer, decoder and
// post-processor. Every rejection names the JSON path; nothing here trusts the file.
#include <algorithm>

#include "tokenizer/fast_json.h"
#include "tokenizer/json_util.h"
#include "tokenizer/model.h"
#include "tokenizer/unicode.h"

namespace recur::tokenizer::detail {
namespace {

// Ids above this are treated as a corrupt file rather than allocated.
constexpr std::int64_t kMaxId = 16 * 1024 * 1024;

Status unsupported(std::string_view path, std::string_view type) {
  return Error(StatusCode::kUnimplemented, "{}: type '{}' is not supported", path, type);
}

Result<std::shared_ptr<Regex>> compile_at(std::string_view pattern, std::string_view path) {
  auto re = Regex::compile(pattern);
  if (!re.is_ok()) return re.status().with_context(path);
  return re;
}

// {"String": s} or {"Regex": r}: the literal, or the compiled regex.
Status parse_pattern(const Json& j, std::string_view path, std::string& literal,
                     std::shared_ptr<Regex>& regex) {
  if (j.is_object() && j.contains("String") && j["String"].is_string()) {
    literal = j["String"].get<std::string>();
    if (literal.empty()) return field_error(path, "empty String pattern");
    return Status::ok();
  }
  if (j.is_object() && j.contains("Regex") && j["Regex"].is_string()) {
    RECUR_ASSIGN_OR_RETURN(regex, compile_at(j["Regex"].get<std::string>(), path));
    return Status::ok();
  }
  return field_error(path, "expected {\"String\": ...} or {\"Regex\": ...}");
}

Status parse_vocab(const TokenizerJson& file, Bpe& bpe) {
  if (!file.has_vocab) return field_error("model.vocab", "missing or not an object");
  std::int64_t max_id = -1;
  for (const auto& [token, id] : file.vocab) {
    if (id < 0 || id > kMaxId) {
      return field_error(join_path("model.vocab", token), "expected an id in [0, 16M]");
    }
    max_id = std::max(max_id, id);
  }
  bpe.id_to_token.assign(static_cast<std::size_t>(max_id + 1), {});
  for (const auto& [token, id] : file.vocab) {
    std::string& slot = bpe.id_to_token[static_cast<std::size_t>(id)];
    if (!slot.empty() || token.empty()) {
      return field_error(join_path("model.vocab", token),
                         fmt::format("empty token, or id {} is also used by '{}'", id, slot));
    }
    slot = token;
  }
  bpe.index();
  return Status::ok();
}

Status parse_merge(const std::array<std::string, 2>& m, bool legacy, std::size_t rank,
                   std::string& merged, Bpe& bpe) {
  std::string_view a = m[0], b = m[1];
  if (legacy) {
    std::size_t space = a.find(' ');
    if (space == std::string::npos || a.find(' ', space + 1) != std::string::npos) {
      return field_error(index_path("model.merges", rank),
                         "expected \"left right\" with one space");
    }
    b = a.substr(space + 1);
    a = a.substr(0, space);
  }
  auto ia = bpe.token_to_id.lookup(a), ib = bpe.token_to_id.lookup(b);
  if (!ia || !ib) {
    return field_error(index_path("model.merges", rank),
                       fmt::format("'{}' is not in the vocabulary", !ia ? a : b));
  }
  merged.assign(a);
  merged.append(b);
  auto im = bpe.token_to_id.lookup(merged);
  if (!im) {
    return field_error(index_path("model.merges", rank),
                       fmt::format("the merged token '{}' is not in the vocabulary", merged));
  }
  bpe.merges.insert(*ia, *ib, {static_cast<std::uint32_t>(rank), *im});
  return Status::ok();
}

Status parse_model(const TokenizerJson& file, Model& model) {
  const Json& j = file.dom;
  auto it = j.find("model");
  if (it == j.end() || !it->is_object()) return field_error("model", "missing or not an object");
  const Json& m = *it;
  RECUR_ASSIGN_OR_RETURN(std::string type, opt_string(m, "type", "BPE", "model"));
  if (type != "BPE") return unsupported("model.type", type);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    RECUR_ASSIGN_OR_RETURN(std::string v, opt_string(m, key, "", "model"));
    if (!v.empty()) return field_error(join_path("model", key), "only empty or null is supported");
  }
  if (m.contains("dropout") && !m["dropout"].is_null() &&
      !(m["dropout"].is_number() && m["dropout"].get<double>() == 0.0)) {
    return field_error("model.dropout", "BPE dropout is not supported (expected null)");
  }
  Bpe& bpe = model.bpe;
  RECUR_ASSIGN_OR_RETURN(bpe.byte_fallback, opt_bool(m, "byte_fallback", false, "model"));
  RECUR_ASSIGN_OR_RETURN(bpe.fuse_unk, opt_bool(m, "fuse_unk", false, "model"));
  RECUR_ASSIGN_OR_RETURN(bpe.ignore_merges, opt_bool(m, "ignore_merges", false, "model"));
  RECUR_RETURN_IF_ERROR(parse_vocab(file, bpe));
  RECUR_ASSIGN_OR_RETURN(std::string unk, opt_string(m, "unk_token", "", "model"));
  if (!unk.empty()) {
    bpe.unk = bpe.token_to_id.lookup(unk);
    if (!bpe.unk) return field_error("model.unk_token", "not in the vocabulary");
  }
  if (!file.has_merges) {
    if (m.contains("merges") && !m["merges"].is_null()) {
      return field_error("model.merges", "expected an array");
    }
    return Status::ok();
  }
  bpe.merges.reserve(file.merges.size());
  std::string merged;
  for (std::size_t i = 0; i < file.merges.size(); ++i) {
    RECUR_RETURN_IF_ERROR(parse_merge(file.merges[i], file.legacy[i], i, merged, bpe));
  }
  return Status::ok();
}

Status parse_added_tokens(const Json& j, Model& model) {
  auto it = j.find("added_tokens");
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_array()) return field_error("added_tokens", "expected an array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    std::string path = index_path("added_tokens", i);
    if (!t.is_object()) return field_error(path, "expected an object");
    AddedToken a;
    RECUR_ASSIGN_OR_RETURN(std::int64_t id, opt_int(t, "id", -1, path));
    if (id < 0 || id > kMaxId) return field_error(join_path(path, "id"), "missing or out of range");
    a.id = static_cast<TokenId>(id);
    RECUR_ASSIGN_OR_RETURN(a.content, req_string(t, "content", path));
    if (a.content.empty() || !utf8_is_valid(a.content)) {
      return field_error(join_path(path, "content"), "empty or not UTF-8");
    }
    RECUR_ASSIGN_OR_RETURN(a.special, opt_bool(t, "special", false, path));
    RECUR_ASSIGN_OR_RETURN(a.lstrip, opt_bool(t, "lstrip", false, path));
    RECUR_ASSIGN_OR_RETURN(a.rstrip, opt_bool(t, "rstrip", false, path));
    RECUR_ASSIGN_OR_RETURN(a.normalized, opt_bool(t, "normalized", !a.special, path));
    RECUR_ASSIGN_OR_RETURN(a.single_word, opt_bool(t, "single_word", false, path));
    auto index = static_cast<std::uint32_t>(model.added.size());
    model.added_by_id[a.id] = index;
    model.added_by_content[a.content] = a.id;
    (a.normalized ? model.normalized_matcher : model.raw_matcher).add(a.content, index);
    model.added.push_back(std::move(a));
  }
  return Status::ok();
}

Status parse_normalizer(const Json& n, std::string_view path, std::vector<NormStep>& out);

Status parse_normalizer_step(const Json& n, std::string_view path, const std::string& type,
                             std::vector<NormStep>& out) {
  using K = NormStep::Kind;
  NormStep s;
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    s.kind = type == "NFC"    ? K::kNfc
             : type == "NFD"  ? K::kNfd
             : type == "NFKC" ? K::kNfkc
                              : K::kNfkd;
  } else if (type == "Lowercase") {
    s.kind = K::kLowercase;
  } else if (type == "Replace") {
    s.kind = K::kReplace;
    if (!n.contains("pattern")) return field_error(join_path(path, "pattern"), "missing");
    RECUR_RETURN_IF_ERROR(
        parse_pattern(n["pattern"], join_path(path, "pattern"), s.pattern, s.regex));
    RECUR_ASSIGN_OR_RETURN(s.content, req_string(n, "content", path));
  } else if (type == "Prepend") {
    s.kind = K::kPrepend;
    RECUR_ASSIGN_OR_RETURN(s.pattern, req_string(n, "prepend", path));
  } else if (type == "Strip") {
    s.kind = K::kStrip;
    RECUR_ASSIGN_OR_RETURN(s.left, opt_bool(n, "strip_left", false, path));
    RECUR_ASSIGN_OR_RETURN(s.right, opt_bool(n, "strip_right", false, path));
  } else if (type == "Sequence") {
    auto it = n.find("normalizers");
    if (it == n.end() || !it->is_array())
      return field_error(join_path(path, "normalizers"), "expected an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      RECUR_RETURN_IF_ERROR(
          parse_normalizer((*it)[i], index_path(join_path(path, "normalizers"), i), out));
    }
    return Status::ok();
  } else {
    return unsupported(join_path(path, "type"), type);
  }
  out.push_back(std::move(s));
  return Status::ok();
}

Status parse_normalizer(const Json& n, std::string_view path, std::vector<NormStep>& out) {
  if (n.is_null()) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(std::string type, type_of(n, path));
  return parse_normalizer_step(n, path, type, out);
}

SplitBehavior behavior_of(std::string_view name, bool& ok) {
  ok = true;
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  ok = false;
  return SplitBehavior::kIsolated;
}

// GPT-2's pre-tokenizer regex, used by ByteLevel with use_regex.
constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Status parse_split(const Json& p, std::string_view path, PreStep& s) {
  if (!p.contains("pattern")) return field_error(join_path(path, "pattern"), "missing");
  RECUR_RETURN_IF_ERROR(
      parse_pattern(p["pattern"], join_path(path, "pattern"), s.literal, s.regex));
  RECUR_ASSIGN_OR_RETURN(std::string behavior, req_string(p, "behavior", path));
  bool ok = false;
  s.behavior = behavior_of(behavior, ok);
  if (!ok) return field_error(join_path(path, "behavior"), fmt::format("unknown '{}'", behavior));
  RECUR_ASSIGN_OR_RETURN(s.invert, opt_bool(p, "invert", false, path));
  return Status::ok();
}

Status parse_metaspace(const Json& p, std::string_view path, PreStep& s) {
  RECUR_ASSIGN_OR_RETURN(s.replacement, opt_string(p, "replacement", "\xE2\x96\x81", path));
  if (s.replacement.empty()) return field_error(join_path(path, "replacement"), "empty");
  RECUR_ASSIGN_OR_RETURN(bool add_prefix, opt_bool(p, "add_prefix_space", true, path));
  RECUR_ASSIGN_OR_RETURN(std::string scheme,
                         opt_string(p, "prepend_scheme", add_prefix ? "always" : "never", path));
  if (scheme == "always") {
    s.prepend = PreStep::Prepend::kAlways;
  } else if (scheme == "first") {
    s.prepend = PreStep::Prepend::kFirst;
  } else if (scheme == "never") {
    s.prepend = PreStep::Prepend::kNever;
  } else {
    return field_error(join_path(path, "prepend_scheme"), fmt::format("unknown '{}'", scheme));
  }
  RECUR_ASSIGN_OR_RETURN(s.split, opt_bool(p, "split", true, path));
  return Status::ok();
}

Status parse_pre_tokenizer(const Json& p, std::string_view path, Model& model) {
  using K = PreStep::Kind;
  if (p.is_null()) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(std::string type, type_of(p, path));
  if (model.byte_level) {
    return field_error(path, "pre-tokenizers after ByteLevel are not supported");
  }
  PreStep s;
  if (type == "Sequence") {
    auto it = p.find("pretokenizers");
    std::string list = join_path(path, "pretokenizers");
    if (it == p.end() || !it->is_array()) return field_error(list, "expected an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      RECUR_RETURN_IF_ERROR(parse_pre_tokenizer((*it)[i], index_path(list, i), model));
    }
    return Status::ok();
  } else if (type == "Split") {
    s.kind = K::kSplit;
    RECUR_RETURN_IF_ERROR(parse_split(p, path, s));
  } else if (type == "ByteLevel") {
    s.kind = K::kByteLevel;
    RECUR_ASSIGN_OR_RETURN(s.add_prefix_space, opt_bool(p, "add_prefix_space", true, path));
    RECUR_ASSIGN_OR_RETURN(bool use_regex, opt_bool(p, "use_regex", true, path));
    if (use_regex) {
      RECUR_ASSIGN_OR_RETURN(s.regex, compile_at(kGpt2Regex, path));
    }
    model.byte_level = true;
  } else if (type == "Digits") {
    s.kind = K::kDigits;
    RECUR_ASSIGN_OR_RETURN(s.individual_digits, opt_bool(p, "individual_digits", false, path));
  } else if (type == "Metaspace") {
    s.kind = K::kMetaspace;
    RECUR_RETURN_IF_ERROR(parse_metaspace(p, path, s));
  } else if (type == "WhitespaceSplit") {
    s.kind = K::kWhitespaceSplit;
  } else {
    return unsupported(join_path(path, "type"), type);
  }
  model.pre_tokenizers.push_back(std::move(s));
  return Status::ok();
}

Status parse_decoder(const Json& d, std::string_view path, Model& model) {
  using K = DecStep::Kind;
  if (d.is_null()) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(std::string type, type_of(d, path));
  model.has_decoder = true;
  DecStep s;
  if (type == "Sequence") {
    auto it = d.find("decoders");
    std::string list = join_path(path, "decoders");
    if (it == d.end() || !it->is_array()) return field_error(list, "expected an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      RECUR_RETURN_IF_ERROR(parse_decoder((*it)[i], index_path(list, i), model));
    }
    return Status::ok();
  } else if (type == "ByteLevel") {
    s.kind = K::kByteLevel;
  } else if (type == "Replace") {
    s.kind = K::kReplace;
    std::shared_ptr<Regex> regex;
    if (!d.contains("pattern")) return field_error(join_path(path, "pattern"), "missing");
    RECUR_RETURN_IF_ERROR(
        parse_pattern(d["pattern"], join_path(path, "pattern"), s.pattern, regex));
    if (regex) return field_error(join_path(path, "pattern"), "only String patterns are supported");
    RECUR_ASSIGN_OR_RETURN(s.content, req_string(d, "content", path));
  } else if (type == "ByteFallback") {
    s.kind = K::kByteFallback;
  } else if (type == "Fuse") {
    s.kind = K::kFuse;
  } else if (type == "Strip") {
    s.kind = K::kStrip;
    RECUR_ASSIGN_OR_RETURN(s.content, req_string(d, "content", path));
    RECUR_ASSIGN_OR_RETURN(std::int64_t start, opt_int(d, "start", 0, path));
    RECUR_ASSIGN_OR_RETURN(std::int64_t stop, opt_int(d, "stop", 0, path));
    if (start < 0 || stop < 0) return field_error(path, "negative start or stop");
    s.start = static_cast<std::size_t>(start);
    s.stop = static_cast<std::size_t>(stop);
  } else if (type == "Metaspace") {
    s.kind = K::kMetaspace;
    PreStep p;
    RECUR_RETURN_IF_ERROR(parse_metaspace(d, path, p));
    s.content = p.replacement;
    s.prepend = p.prepend != PreStep::Prepend::kNever;
  } else {
    return unsupported(join_path(path, "type"), type);
  }
  model.decoders.push_back(std::move(s));
  return Status::ok();
}

}  // namespace

Status parse_post_processor(const Json& p, std::string_view path, Model& model);

Result<std::unique_ptr<Model>> parse_tokenizer_json(std::string_view text) {
  RECUR_ASSIGN_OR_RETURN(TokenizerJson file, parse_tokenizer_file(text));
  const Json& j = file.dom;
  if (!j.is_object()) return field_error("tokenizer.json", "expected an object");
  auto model = std::make_unique<Model>();
  Status st = parse_model(file, *model);
  if (st.is_ok()) st = parse_added_tokens(j, *model);
  if (st.is_ok() && j.contains("normalizer")) {
    st = parse_normalizer(j["normalizer"], "normalizer", model->normalizers);
  }
  if (st.is_ok() && j.contains("pre_tokenizer")) {
    st = parse_pre_tokenizer(j["pre_tokenizer"], "pre_tokenizer", *model);
  }
  if (st.is_ok() && j.contains("decoder")) st = parse_decoder(j["decoder"], "decoder", *model);
  if (st.is_ok() && j.contains("post_processor")) {
    st = parse_post_processor(j["post_processor"], "post_processor", *model);
  }
  if (!st.is_ok()) return st.with_context("tokenizer.json");
  std::size_t n = model->bpe.id_to_token.size();
  for (const AddedToken& a : model->added) n = std::max(n, static_cast<std::size_t>(a.id) + 1);
  model->vocab_size = n;
  return model;
}

}  // namespace recur::tokenizer::detail
