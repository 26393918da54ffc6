// The command line's names of a table's option: its own and its aliases (option_table.h).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "bench/option_table.h"

namespace ts {
namespace {

// "--x,--y,!--no-x" -> {"--x,--y", "--no-x"}: the names that set the option and those that clear it (a bool's).
std::pair<std::string, std::string> splitNegated(const std::string& names) {
  const auto bang = names.find(",!");
  if (bang == std::string::npos) return {names, ""};
  return {names.substr(0, bang), names.substr(bang + 2)};
}

void append(std::string& list, const std::string& names) {
  if (!names.empty()) list += (list.empty() ? "" : ",") + names;
}

}  // namespace

std::string commandLineNames(const OptionInfo& info) {
  auto [set, clear] = splitNegated(info.names);
  for (const std::string& alias : info.aliases) {
    const auto [aliasSet, aliasClear] = splitNegated(alias);
    append(set, aliasSet);
    append(clear, aliasClear);
  }
  return clear.empty() ? set : set + ",!" + clear;
}

std::vector<std::string> aliasNames(const OptionInfo& info) {
  std::vector<std::string> out;
  for (const std::string& alias : info.aliases)
    for (std::size_t start = 0; start <= alias.size();) {
      const std::size_t end = std::min(alias.find(',', start), alias.size());
      std::string name = alias.substr(start, end - start);
      if (!name.empty() && name[0] == '!') name.erase(0, 1);
      if (!name.empty()) out.push_back(name);
      start = end + 1;
    }
  return out;
}

}  // namespace ts
