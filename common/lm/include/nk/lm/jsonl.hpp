// jsonl.hpp - a user's data as JSON lines (one object a line), read the same
// way by every tool that takes --from-jsonl: blank lines skipped, errors name
// the file and the line.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace nk::lm {

/// One parsed line: its object and its place ("line N") for messages.
struct JsonLine {
  const nlohmann::json& object;
  std::string path, where;
  /// The string field 'key'; a missing one is "" unless 'required' (exit 3
  /// naming the file and line), a field that is not a string exit 3.
  std::string text(const char* key, bool required = true) const;
};

/// Calls 'row' for every non-blank line of the file. Exit 4 when it cannot be
/// read; exit 3 naming the file and line for a line that is not JSON or not
/// an object.
void for_each_json_line(const std::string& path, const std::function<void(const JsonLine&)>& row);

}  // namespace nk::lm
