// SAX handler: a DOM for the small parts of tokenizer.json, vectors for model.vocab/merges.
#include "tokenizer/fast_json.h"

namespace recur::tokenizer::detail {
namespace {

class Handler : public nlohmann::json_sax<Json> {
 public:
  explicit Handler(TokenizerJson& out) : out_(out) {}
  std::string error;  // a located error in vocab/merges, or empty
  std::size_t error_pos = 0;

  bool null() override { return value(Json(nullptr)); }
  bool boolean(bool v) override { return value(Json(v)); }
  bool number_integer(number_integer_t v) override { return number(v, Json(v)); }
  bool number_unsigned(number_unsigned_t v) override {
    return number(v > static_cast<number_unsigned_t>(INT64_MAX) ? -1 : static_cast<std::int64_t>(v),
                  Json(v));
  }
  bool number_float(number_float_t v, const string_t&) override { return value(Json(v)); }
  bool binary(binary_t&) override { return bad("unexpected binary value"); }
  bool string(string_t& s) override {
    if (mode_ == Mode::kMerges) {
      out_.merges.push_back({std::move(s), {}});
      out_.legacy.push_back(true);
      return true;
    }
    if (mode_ == Mode::kMergePair) {
      if (pair_n_ >= 2)
        return bad(fmt::format("model.merges[{}]: more than two strings", out_.merges.size() - 1));
      out_.merges.back()[pair_n_++] = std::move(s);
      return true;
    }
    if (mode_ == Mode::kVocab)
      return bad(fmt::format("model.vocab.{}: expected an integer id", key_));
    return value(Json(std::move(s)));
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) override {
    if (mode_ != Mode::kDom) return bad(where("unexpected object"));
    if (in_model() && key_ == "vocab") {
      mode_ = Mode::kVocab;
      out_.has_vocab = true;
      return true;
    }
    return open(Json::object());
  }
  bool end_object() override {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_n_ = 0;
      out_.merges.push_back({});
      out_.legacy.push_back(false);
      return true;
    }
    if (mode_ != Mode::kDom) return bad(where("unexpected array"));
    if (in_model() && key_ == "merges") {
      mode_ = Mode::kMerges;
      out_.has_merges = true;
      return true;
    }
    return open(Json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::kMergePair) {
      if (pair_n_ != 2)
        return bad(fmt::format("model.merges[{}]: expected two strings", out_.merges.size() - 1));
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kDom;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&,
                   const nlohmann::detail::exception&) override {
    if (error.empty()) error = fmt::format("invalid JSON near byte {}", pos);
    return false;
  }

 private:
  enum class Mode { kDom, kVocab, kMerges, kMergePair };
  bool in_model() const {
    return stack_.size() == 2 && stack_[1].second == "model" && stack_[1].first->is_object();
  }
  std::string where(std::string_view what) const {
    if (mode_ == Mode::kVocab) return fmt::format("model.vocab.{}: {}", key_, what);
    return fmt::format("model.merges[{}]: {}", out_.merges.size(), what);
  }
  bool bad(std::string msg) {
    error = std::move(msg);
    return false;
  }
  bool number(std::int64_t id, Json v) {
    if (mode_ == Mode::kVocab) {
      out_.vocab.emplace_back(std::move(key_), id);
      return true;
    }
    if (mode_ != Mode::kDom) return bad(where("expected a string"));
    return value(std::move(v));
  }
  Json* insert(Json v) {
    if (stack_.empty()) {
      out_.dom = std::move(v);
      return &out_.dom;
    }
    Json* top = stack_.back().first;
    if (top->is_object()) return &((*top)[key_] = std::move(v));
    top->push_back(std::move(v));
    return &top->back();
  }
  bool value(Json v) {
    if (mode_ != Mode::kDom) return bad(where("expected a string"));
    insert(std::move(v));
    return true;
  }
  bool open(Json container) {
    // The loader recurses into Sequence steps and the DOM's copies and dumps recurse per level:
    // bounded so "[[[[..." cannot overflow the stack. Real files nest 6 deep.
    constexpr std::size_t kMaxDepth = 64;
    if (stack_.size() >= kMaxDepth)
      return bad(fmt::format("nested deeper than {} levels", kMaxDepth));
    std::string k = stack_.empty() || !stack_.back().first->is_object() ? std::string() : key_;
    stack_.emplace_back(insert(std::move(container)), std::move(k));
    return true;
  }

  TokenizerJson& out_;
  std::vector<std::pair<Json*, std::string>> stack_;  // open containers and their keys
  std::string key_;
  Mode mode_ = Mode::kDom;
  int pair_n_ = 0;
};

}  // namespace

Result<TokenizerJson> parse_tokenizer_file(std::string_view text) {
  TokenizerJson out;
  Handler handler(out);
  bool ok = Json::sax_parse(text.begin(), text.end(), &handler,
                            nlohmann::detail::input_format_t::json, /*strict=*/true);
  if (!ok || !handler.error.empty()) {
    return Error(StatusCode::kInvalidArgument, "tokenizer.json: {}",
                 handler.error.empty() ? std::string("invalid JSON") : handler.error);
  }
  return out;
}

}  // namespace recur::tokenizer::detail
