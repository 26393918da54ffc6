#pragma once
// The `run` block of a result document: tool, command line, resolved configuration, times, every host's
// inventory and versions, the world layout and the environment. Built collectively (every process
// contributes its host and ranks); only process 0 uses the result.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts {

class Bootstrap;
struct Launch;

std::string isoTimeNow();  // UTC, e.g. "2026-11-22T10:04:05.123Z"

// Collective: every process contributes its host's inventory (once per host). The ranks of each step's
// communicator are added later, as run.layouts (RunContext::addLayout); run.launcher is `launch` (detectLaunch()).
nlohmann::json makeRunMetadata(Bootstrap& boot, const Launch& launch, const std::string& subcommand,
                               const std::vector<std::string>& argv, const nlohmann::json& config);

}  // namespace ts
