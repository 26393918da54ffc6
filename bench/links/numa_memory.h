#pragma once
// Host memory placed on one NUMA node (the one closest to a GPU, for host<->device copies): hwloc binds it
// where built in; otherwise, or when the node is unknown, it is ordinary memory. Pages are touched here.
#include <cstddef>
#include <string>

namespace ts {

// The NUMA node of a PCI device ("0000:18:00.0"), from sysfs; -1 when the kernel does not say.
int numaNodeOfPciDevice(const std::string& busId);

class NumaHostBuffer {
 public:
  NumaHostBuffer(std::size_t bytes, int numaNode);
  ~NumaHostBuffer();
  NumaHostBuffer(const NumaHostBuffer&) = delete;
  NumaHostBuffer& operator=(const NumaHostBuffer&) = delete;
  void* data() const { return ptr_; }
  int boundNode() const { return bound_; }  // -1 when not bound

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int bound_ = -1;
  bool viaHwloc_ = false;
};

}  // namespace ts
