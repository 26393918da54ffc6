// The checks every number option gets from its type (bench/option_table.h), so that an option added later
// is covered without being listed anywhere.
#include <string>

#include "base/units.h"
#include "bench/option_table.h"

namespace ts::option_detail {

CLI::Validator finiteNumber() {
  return CLI::Validator(
      [](std::string& text) {
        double value = 0;
        // Read as CLI11 will read it; text that is no number at all is the conversion's error to report.
        if (!CLI::detail::lexical_cast(text, value)) return std::string();
        return nonFiniteReason(value, text);
      },
      "");
}

CLI::Validator noMinusSign() {
  return CLI::Validator(
      [](std::string& text) {
        const auto first = text.find_first_not_of(" \t");
        return first != std::string::npos && text[first] == '-' ? text + " is negative" : std::string();
      },
      "");
}

}  // namespace ts::option_detail
