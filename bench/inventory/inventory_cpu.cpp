// CPU, memory and NUMA: hwloc where built in (sockets, cores, NUMA nodes with their memory), /proc otherwise.
#include <unistd.h>

#include <fstream>
#include <string>

#include "bench/inventory/inventory.h"
#ifdef TRAINSCOPE_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace ts {
namespace {

std::string procValue(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    const auto b = v.find_first_not_of(" \t");
    return b == std::string::npos ? "" : v.substr(b);
  }
  return "";
}

}  // namespace

nlohmann::json collectCpuInventory() {
  nlohmann::json cpu;
  const std::string model = procValue("/proc/cpuinfo", "model name");
  cpu["model"] = model.empty() ? nlohmann::json(nullptr) : nlohmann::json(model);
  cpu["threads"] = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  const std::string memKb = procValue("/proc/meminfo", "MemTotal");
  cpu["memory_bytes"] = memKb.empty() ? 0ull : std::stoull(memKb) * 1024ull;
  cpu["sockets"] = nullptr;
  cpu["cores"] = nullptr;
  cpu["numa_nodes"] = nullptr;
  cpu["numa"] = nlohmann::json::array();
#ifdef TRAINSCOPE_HAVE_HWLOC
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) == 0) {
    if (hwloc_topology_load(topo) == 0) {
      cpu["sockets"] = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
      cpu["cores"] = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
      const int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
      cpu["numa_nodes"] = nodes;
      for (int i = 0; i < nodes; ++i) {
        hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
        char cpus[256] = {};
        hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), n->cpuset);
        cpu["numa"].push_back({{"node", n->os_index}, {"memory_bytes", n->attr->numanode.local_memory}, {"cpus", cpus}});
      }
    }
    hwloc_topology_destroy(topo);
  }
#endif
  return cpu;
}

}  // namespace ts
