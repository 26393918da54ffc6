#include "base/json_text.h"

namespace ts {

std::string jsonText(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string jsonTextInOrder(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string jsonTextSpaced(const nlohmann::json& j) {
  // nlohmann writes ": " only when it indents. Indented by 0, every line break it writes lies between two tokens
  // (a string's own line breaks are escaped, "\n"), so dropping them, and writing ", " where one follows a comma,
  // gives the one-line text.
  const std::string indented = jsonText(j, 0);
  std::string out;
  out.reserve(indented.size() + indented.size() / 8);
  for (const char c : indented) {
    if (c != '\n')
      out += c;
    else if (!out.empty() && out.back() == ',')
      out += ' ';
  }
  return out;
}

}  // namespace ts
