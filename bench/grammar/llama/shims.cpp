// The three string helpers json-schema-to-grammar.cpp takes from common.cpp (not built here).
#include <string>
#include <vector>
std::string string_repeat(const std::string& str, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += str;
  return out;
}
std::string string_join(const std::vector<std::string>& values, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? separator : "") + values[i];
  return out;
}
std::vector<std::string> string_split(const std::string& str, const std::string& delimiter) {
  std::vector<std::string> parts;
  size_t start = 0, end;
  while ((end = str.find(delimiter, start)) != std::string::npos) {
    parts.push_back(str.substr(start, end - start));
    start = end + delimiter.size();
  }
  parts.push_back(str.substr(start));
  return parts;
}
