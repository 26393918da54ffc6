#include "bench/kernels/host_caches.h"

#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/text_file.h"

namespace ts {

std::optional<std::size_t> parseCacheSize(std::string_view text) {
  std::size_t i = 0, value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
    value = value * 10 + static_cast<std::size_t>(text[i++] - '0');
  if (i == 0) return std::nullopt;
  const std::string_view unit = text.substr(i);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return std::nullopt;
}

std::vector<CacheLevelSize> sumCacheLevels(const std::vector<CacheInstance>& seen) {
  std::map<int, std::map<std::string, std::size_t>> byLevel;  // level -> instance (its CPU list) -> size
  for (const CacheInstance& c : seen)
    if (c.level > 0 && c.bytes > 0 && (c.type == "Data" || c.type == "Unified")) byLevel[c.level][c.sharedCpus] = c.bytes;
  std::vector<CacheLevelSize> out;
  for (const auto& [level, instances] : byLevel) {
    CacheLevelSize s{level, 0, 0};
    for (const auto& [cpus, bytes] : instances) {
      s.bytes += bytes;
      ++s.instances;
    }
    out.push_back(s);
  }
  return out;
}

std::vector<CacheLevelSize> hostDataCaches(const std::vector<int>& cpus) {
  std::vector<CacheInstance> seen;
  for (int cpu : cpus)
    for (int index = 0;; ++index) {
      const std::string dir = fmt::format("/sys/devices/system/cpu/cpu{}/cache/index{}/", cpu, index);
      const std::string level = readFirstLine(dir + "level");
      if (level.empty()) break;
      const std::optional<std::size_t> bytes = parseCacheSize(readFirstLine(dir + "size"));
      if (!bytes) continue;
      seen.push_back({std::atoi(level.c_str()), readFirstLine(dir + "type"), *bytes, readFirstLine(dir + "shared_cpu_list")});
    }
  return sumCacheLevels(seen);
}

std::vector<int> cpusInUse() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  if (out.empty())
    for (long c = 0; c < ::sysconf(_SC_NPROCESSORS_ONLN); ++c) out.push_back(static_cast<int>(c));
  return out;
}

}  // namespace ts
