#include "bench/links/links_options.h"

#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/input_file.h"
#include "base/units.h"
#include "base/user_paths.h"

namespace ts {

namespace {
constexpr std::uintmax_t kMaxPairsFileBytes = 1 << 20;  // "hostA hostB" lines: a megabyte is tens of thousands of pairs
}  // namespace

nlohmann::json toJson(const LinksOptions& o) {
  nlohmann::json j = o.given;
  j["resolved"] = {{"memory", o.memory},
                   {"mpi", o.mpi},
                   {"gpu", o.gpu},
                   {"memory_bytes", o.memoryBytes},
                   {"latency_bytes", o.latencyBytes},
                   {"bandwidth_bytes", o.bandwidthBytes},
                   {"copy_bytes", o.copyBytes}};
  return j;
}

void validate(const LinksOptions& o) {
  if (!o.memory && !o.mpi && !o.gpu) throw UsageError("--tests: nothing to run");
  if (o.latencyBytes == 0) throw UsageError("--latency-bytes must be at least 1 byte");
  if (o.bandwidthBytes == 0) throw UsageError("--bandwidth-bytes must be at least 1 byte");
  if (o.copyBytes == 0 || o.copyBytes % 16) throw UsageError("--copy-bytes must be a positive multiple of 16 bytes");
  if (o.window < 1) throw UsageError("--window must be at least 1");
  if (o.iters < 1 || o.latencyIters < 1) throw UsageError("-n/--iters and --latency-iters must be at least 1");
  if (o.warmup < 0) throw UsageError("-w/--warmup cannot be negative");
  if (o.threads < 0) throw UsageError("--threads cannot be negative");
  if (!(o.outlierFraction > 0 && o.outlierFraction < 1)) throw UsageError("--outlier-fraction must be between 0 and 1");
  if (o.timeoutS < 0) throw UsageError("--timeout cannot be negative");
  if (o.pairs != "ring" && o.pairs != "all") {
    if (!std::filesystem::exists(o.pairs))
      throw UsageError(fmt::format("--pairs: '{}' is neither ring, all, nor a file", o.pairs));
    checkInputFile("--pairs", o.pairs, kMaxPairsFileBytes);
  }
}

std::vector<std::pair<int, int>> linkPairs(const std::string& spec, const std::vector<std::string>& hosts) {
  const int n = static_cast<int>(hosts.size());
  std::vector<std::pair<int, int>> pairs;
  if (n < 2) return pairs;
  if (spec == "ring") {
    for (int r = 0; r < n; ++r)
      if (n > 2 || r == 0) pairs.emplace_back(r, (r + 1) % n);  // two ranks make one pair, not two
    return pairs;
  }
  if (spec == "all") {
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) pairs.emplace_back(a, b);
    return pairs;
  }
  return linkPairsFromText(readInputFile("--pairs", spec, kMaxPairsFileBytes), spec, hosts);
}

std::vector<std::pair<int, int>> linkPairsFromText(std::string_view text, const std::string& spec,
                                                   const std::vector<std::string>& hosts) {
  const int n = static_cast<int>(hosts.size());
  std::vector<std::pair<int, int>> pairs;
  // One "hostA hostB" per line ('#' comments); each host's first rank stands for it.
  auto firstRank = [&](const std::string& host, int line) {
    for (int r = 0; r < n; ++r)
      if (hosts[r] == host) return r;
    const std::set<std::string> known(hosts.begin(), hosts.end());
    throw UsageError(
        fmt::format("{}:{}: host '{}' has no rank in this run (hosts: {})", spec, line, host, fmt::join(known, ", ")));
  };
  std::istringstream in{std::string(text)};
  std::string content;
  int line = 0;
  while (std::getline(in, content)) {
    ++line;
    if (const auto hash = content.find('#'); hash != std::string::npos) content.resize(hash);
    std::istringstream words(content);
    std::string a, b, extra;
    if (!(words >> a)) continue;
    if (!(words >> b) || (words >> extra)) throw UsageError(fmt::format("{}:{}: expected two host names", spec, line));
    const int ra = firstRank(a, line), rb = firstRank(b, line);
    if (ra == rb) throw UsageError(fmt::format("{}:{}: '{}' and '{}' are the same rank", spec, line, a, b));
    pairs.emplace_back(ra, rb);
  }
  if (pairs.empty()) throw UsageError(fmt::format("--pairs {}: no pairs in the file", spec));
  return pairs;
}

}  // namespace ts
