// The registry of subcommands: adding one is a line here (and its wing).
#include "bench/commands.h"

#include <algorithm>

namespace ts {

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> all = {
      envSubcommand(),    linksSubcommand(),      collectivesSubcommand(), kernelsSubcommand(),
      trainSubcommand(),  checkpointSubcommand(), scaleSubcommand(),       suiteSubcommand(),
      reportSubcommand(), compareSubcommand(),    analyzeSubcommand(),     exportSubcommand(),
      importSubcommand(), acceptSubcommand(),     historySubcommand(),     predictSubcommand(),
  };
  return all;
}

std::string optionKey(const std::string& names) {
  std::string key = names;
  for (std::size_t start = 0; start < names.size();) {
    const std::size_t end = std::min(names.find(',', start), names.size());
    const std::string name = names.substr(start, end - start);
    if (name.rfind("--", 0) == 0) {
      key = name.substr(2);
      break;
    }
    start = end + 1;
  }
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

}  // namespace ts
