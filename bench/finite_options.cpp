// Every real-valued option of the command line takes finite numbers only: one check, applied to every
// option CLI11 reads as a FLOAT, so that an option added later is covered without being listed here.
#include <string>

#include "base/units.h"
#include "bench/commands.h"

namespace ts {

void requireFiniteNumbers(CLI::App& app) {
  static const CLI::Validator finite(
      [](std::string& text) {
        double value = 0;
        // Read as CLI11 will read it; text that is no number at all is the conversion's error to report.
        if (!CLI::detail::lexical_cast(text, value)) return std::string();
        return nonFiniteReason(value, text);
      },
      "");
  for (CLI::Option* option : app.get_options())
    if (option->get_type_name().rfind("FLOAT", 0) == 0) option->check(finite);
  for (CLI::App* sub : app.get_subcommands({})) requireFiniteNumbers(*sub);
}

}  // namespace ts
