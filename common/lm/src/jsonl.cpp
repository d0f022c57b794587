// jsonl.cpp - JSON lines, one object a line.
#include "nk/lm/jsonl.hpp"

#include <fstream>

#include "nk/error.hpp"

namespace nk::lm {

std::string JsonLine::text(const char* key, bool required) const {
  if (!object.contains(key)) {
    if (required) throw input_error(path, where, std::string("has no \"") + key + "\"");
    return "";
  }
  if (!object[key].is_string()) throw input_error(path, where, std::string("\"") + key + "\" is not a string");
  return object[key].get<std::string>();
}

void for_each_json_line(const std::string& path, const std::function<void(const JsonLine&)>& row) {
  std::ifstream in(path);
  if (!in) throw io_error(path, "cannot read the JSON lines");
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "line " + std::to_string(number);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      throw input_error(path, where, std::string("is not JSON: ") + e.what());
    }
    if (!j.is_object()) throw input_error(path, where, "is not a JSON object");
    row(JsonLine{j, path, where});
  }
}

}  // namespace nk::lm
