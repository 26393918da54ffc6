#include "bench/links/numa_memory.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

#ifdef TRAINSCOPE_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace ts {

int numaNodeOfPciDevice(const std::string& busId) {
  std::string id = busId;
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (id.size() > 12 && id.find(':') == 8) id = id.substr(4);  // NVML's 8-digit domain -> sysfs's 4
  std::ifstream in("/sys/bus/pci/devices/" + id + "/numa_node");
  int node = -1;
  if (!(in >> node)) return -1;
  return node;
}

#ifdef TRAINSCOPE_HAVE_HWLOC
namespace {
hwloc_topology_t topology() {
  static hwloc_topology_t topo = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0) return static_cast<hwloc_topology_t>(nullptr);
    return t;
  }();
  return topo;
}
}  // namespace
#endif

NumaHostBuffer::NumaHostBuffer(std::size_t bytes, int numaNode) : bytes_(bytes) {
#ifdef TRAINSCOPE_HAVE_HWLOC
  if (numaNode >= 0 && topology()) {
    if (hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topology(), static_cast<unsigned>(numaNode))) {
      ptr_ = hwloc_alloc_membind(topology(), bytes, node->nodeset, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
      if (ptr_) {
        viaHwloc_ = true;
        bound_ = numaNode;
      }
    }
  }
#endif
  if (!ptr_) ptr_ = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!ptr_) throw std::bad_alloc();
  std::memset(ptr_, 0, bytes);  // first touch: the pages now exist where they were bound
}

NumaHostBuffer::~NumaHostBuffer() {
#ifdef TRAINSCOPE_HAVE_HWLOC
  if (viaHwloc_) {
    hwloc_free(topology(), ptr_, bytes_);
    return;
  }
#endif
  std::free(ptr_);
}

}  // namespace ts
