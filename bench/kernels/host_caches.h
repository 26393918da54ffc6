#pragma once
// The host's data caches as Linux describes them in sysfs (/sys/devices/system/cpu/cpu<N>/cache/index<i>/:
// level, type, size, shared_cpu_list), summed per level over the instances a set of CPUs reaches. The
// memory ceilings per level size their copies by it, and a kernel's bytes pick its ceiling by it.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

// One cache as one CPU sees it (one index directory).
struct CacheInstance {
  int level = 0;
  std::string type;  // Data, Instruction, Unified
  std::size_t bytes = 0;
  std::string sharedCpus;  // shared_cpu_list: the same text for every CPU sharing this instance
};

struct CacheLevelSize {
  int level = 0;
  std::size_t bytes = 0;  // summed over the distinct instances
  int instances = 0;
};

// sysfs sizes: "32K", "32768K", "8M", "1G", or plain bytes; nothing for anything else.
std::optional<std::size_t> parseCacheSize(std::string_view text);
// Data and unified caches by level, nearest first; an instance shared by several CPUs counts once.
std::vector<CacheLevelSize> sumCacheLevels(const std::vector<CacheInstance>& seen);
// The caches of `cpus` read from sysfs (empty where sysfs has none, as in some containers).
std::vector<CacheLevelSize> hostDataCaches(const std::vector<int>& cpus);
// The CPUs this process may run on (its affinity; all online CPUs when that cannot be read).
std::vector<int> cpusInUse();

}  // namespace ts
