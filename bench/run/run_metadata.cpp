#include "bench/run/run_metadata.h"

#include <chrono>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "base/json_text.h"
#include "bench/config_version.h"
#include "bench/inventory/inventory.h"
#include "comm/bootstrap.h"
#include "comm/launcher.h"
#include "trainscope/build_info.h"

namespace ts {

std::string isoTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms));
}

namespace {

// Who started the run and how its tasks landed: a cluster result names its Slurm job and nodes.
nlohmann::json launcherJson(const Launch& l, const nlohmann::json& ranksByHost) {
  auto orNull = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"kind", std::string(launcherName(l.launcher))},
          {"job_id", orNull(l.jobId)},
          {"nodes", orNull(l.nodes)},
          {"tasks", l.size > 0 ? nlohmann::json(l.size) : nlohmann::json(nullptr)},
          {"tasks_per_node", orNull(l.tasksPerNode)},
          {"ranks_by_host", ranksByHost}};
}

}  // namespace

nlohmann::json makeRunMetadata(Bootstrap& boot, const Launch& launch, const std::string& subcommand,
                               const std::vector<std::string>& argv, const nlohmann::json& config) {
  const std::string started = isoTimeNow();
  // The first process on each host reports the host's inventory; the others only their host name.
  nlohmann::json mine = {{"host", hostName()}};
  if (boot.localRank() == 0) {
    mine["inventory"] = collectHostInventory();
    mine["inventory"]["versions"] = collectVersions();
  }
  nlohmann::json hosts = nlohmann::json::array();
  std::set<std::string> seen, names;
  nlohmann::json ranksByHost = nlohmann::json::object();  // the task layout as it came out: host -> its ranks
  int rank = 0;
  for (const auto& s : boot.allGatherStrings(jsonText(mine))) {
    const auto p = nlohmann::json::parse(s);
    names.insert(p["host"].get<std::string>());
    ranksByHost[p["host"].get<std::string>()].push_back(rank++);
    if (p.contains("inventory") && seen.insert(p["host"].get<std::string>()).second) hosts.push_back(p["inventory"]);
  }
  return {{"tool", {{"name", "trainscope"}, {"version", build::kVersion}, {"git_commit", build::kGitCommit}}},
          {"subcommand", subcommand},
          {"command_line", argv},
          {"config", config},
          {"config_version", kConfigVersion},
          {"started_at", started},
          {"ended_at", nullptr},
          {"hosts", hosts},
          {"world", {{"processes", boot.size()}, {"hosts", names.size()}, {"bootstrap", nameOf(boot.kind())}}},
          {"launcher", launcherJson(launch, ranksByHost)},
          {"layouts", nlohmann::json::array()},
          {"environment", collectEnvironment()}};
}

}  // namespace ts
