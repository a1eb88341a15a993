// Integer ranges of the JSON Schema compiler: [lo, hi] as alternatives by digit count and leading
// digits, e.g. 12..345 = "1" [2-9] | [2-9] [0-9] | [1-2] [0-9] [0-9] | "3" ( [0-3] [0-9] | "4"
// [0-5] ).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "grammar/json_schema_internal.h"

namespace recur::grammar::schema_detail {
namespace {

std::string join(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (std::size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
  return out + " )";
}

std::string digit_class(char lo, char hi) {
  if (lo == hi) return fmt::format("\"{}\"", lo);
  return fmt::format("[{}-{}]", lo, hi);
}

std::string any_digits(std::size_t n) {
  if (n == 0) return {};
  if (n == 1) return "[0-9]";
  return fmt::format("[0-9]{{{}}}", n);
}

std::string then(std::string head, const std::string& tail) {
  if (tail.empty()) return head;
  return head + " " + tail;
}

bool all_of(std::string_view s, char c) { return s.find_first_not_of(c) == std::string_view::npos; }

// Digit strings of x's length between x and y (x <= y, same length), leading zeros allowed: the
// caller keeps the first digit of a multi-digit number non-zero.
std::string same_length(std::string_view x, std::string_view y) {
  std::size_t n = x.size();
  if (n == 0) return {};
  if (x == y) return fmt::format("\"{}\"", x);
  if (x[0] == y[0]) return then(fmt::format("\"{}\"", x[0]), same_length(x.substr(1), y.substr(1)));
  std::string_view xt = x.substr(1), yt = y.substr(1);
  bool x_low = all_of(xt, '0'), y_high = all_of(yt, '9');
  std::vector<std::string> alts;
  if (!x_low) {
    alts.push_back(then(fmt::format("\"{}\"", x[0]), same_length(xt, std::string(n - 1, '9'))));
  }
  char mid_lo = x_low ? x[0] : static_cast<char>(x[0] + 1);
  char mid_hi = y_high ? y[0] : static_cast<char>(y[0] - 1);
  if (mid_lo <= mid_hi) alts.push_back(then(digit_class(mid_lo, mid_hi), any_digits(n - 1)));
  if (!y_high) {
    alts.push_back(then(fmt::format("\"{}\"", y[0]), same_length(std::string(n - 1, '0'), yt)));
  }
  return join(alts);
}

std::int64_t pow10(std::size_t n) {
  std::int64_t v = 1;
  while (n--) v *= 10;
  return v;
}

// Decimal numbers without leading zeros in [a, b] (a >= 0; b open when nullopt).
std::vector<std::string> non_negative(std::int64_t a, std::optional<std::int64_t> b) {
  std::vector<std::string> alts;
  std::size_t len_a = std::to_string(a).size();
  std::size_t len_b = b ? std::to_string(*b).size() : len_a;
  for (std::size_t len = len_a; len <= len_b; ++len) {
    std::int64_t lo = std::max(a, len == 1 ? 0 : pow10(len - 1));
    std::int64_t hi = b ? std::min(*b, pow10(len) - 1) : pow10(len) - 1;
    if (lo <= hi) alts.push_back(same_length(std::to_string(lo), std::to_string(hi)));
  }
  if (!b) alts.push_back(fmt::format("[1-9] [0-9]{{{},}}", len_a));
  return alts;
}

}  // namespace

std::string integer_range_gbnf(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi) {
  std::vector<std::string> alts;
  if (!lo || *lo < 0) {  // negative numbers: "-" and a magnitude in [max(1, -hi), -lo]
    std::int64_t mag_lo = hi && *hi < 0 ? -*hi : 1;
    std::optional<std::int64_t> mag_hi;
    if (lo) mag_hi = -*lo;
    alts.push_back("\"-\" " + join(non_negative(mag_lo, mag_hi)));
  }
  if (!hi || *hi >= 0) {
    for (auto& a : non_negative(lo && *lo > 0 ? *lo : 0, hi)) alts.push_back(a);
  }
  return join(alts);
}

}  // namespace recur::grammar::schema_detail
