#include "bench/run_metadata.h"

#include <chrono>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "bench/inventory.h"
#include "comm/bootstrap.h"
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

nlohmann::json makeRunMetadata(Bootstrap& boot, const std::string& subcommand, const std::vector<std::string>& argv,
                               const nlohmann::json& config, const nlohmann::json& world, const nlohmann::json& ranks) {
  const std::string started = isoTimeNow();
  const std::string host = hostName();
  // Each process reports its ranks; the first process on each host also reports the host's inventory.
  nlohmann::json mine = {{"process", boot.rank()}, {"host", host}, {"ranks", ranks}};
  if (boot.localRank() == 0) {
    mine["inventory"] = collectHostInventory();
    mine["inventory"]["versions"] = collectVersions();
  }
  const auto all = boot.allGatherStrings(mine.dump());

  nlohmann::json hosts = nlohmann::json::array();
  nlohmann::json rankList = nlohmann::json::array();
  std::set<std::string> seen;
  for (const auto& s : all) {
    const auto p = nlohmann::json::parse(s);
    for (auto r : p["ranks"]) {
      r["process"] = p["process"];
      r["host"] = p["host"];
      rankList.push_back(r);
    }
    if (p.contains("inventory") && seen.insert(p["host"].get<std::string>()).second) hosts.push_back(p["inventory"]);
  }
  std::sort(rankList.begin(), rankList.end(), [](const auto& a, const auto& b) { return a["rank"] < b["rank"]; });

  nlohmann::json w = world;
  w["processes"] = boot.size();
  w["hosts"] = hosts.size();
  w["bootstrap"] = boot.kind();
  w["ranks"] = rankList;
  return {{"tool", {{"name", "trainscope"}, {"version", build::kVersion}, {"git_commit", build::kGitCommit}}},
          {"subcommand", subcommand},
          {"command_line", argv},
          {"config", config},
          {"started_at", started},
          {"ended_at", nullptr},
          {"hosts", hosts},
          {"world", w},
          {"environment", collectEnvironment()}};
}

}  // namespace ts
