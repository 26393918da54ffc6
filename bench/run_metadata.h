#pragma once
// The `run` block of a result document: tool, command line, resolved configuration, times, every host's
// inventory and versions, the world layout and the environment. Built collectively (every process
// contributes its host and ranks); only process 0 uses the result.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts {

class Bootstrap;

std::string isoTimeNow();  // UTC, e.g. "2026-11-22T10:04:05.123Z"

// `ranks`: this process's ranks as [{"rank", "device"}]; gathered with process and host into run.world.
nlohmann::json makeRunMetadata(Bootstrap& boot, const std::string& subcommand, const std::vector<std::string>& argv,
                               const nlohmann::json& config, const nlohmann::json& world, const nlohmann::json& ranks);

}  // namespace ts
