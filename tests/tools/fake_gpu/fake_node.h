#pragma once
// The node the fake GPU library describes: TS_FAKE_GPU=<model>:<count> (h100:8, h200:1, ... up to 8 GPUs),
// read at every call so that a test may change it between cases. The figures are the SXM boards' as CUDA,
// NVML and nvidia-smi report them on HGX nodes (sources beside each); what no host-side decision reads
// (texture limits and the like) is left at zero.
#include <string>
#include <vector>

namespace fakegpu {

struct Model {
  const char* key;   // as TS_FAKE_GPU names it
  const char* name;  // cudaDeviceProp::name, nvmlDeviceGetName
  unsigned long long memoryBytes;
  int l2Bytes;
  int smClockMhz;   // the maximum (boost) SM clock
  int memClockMhz;  // the HBM clock; bandwidth = 2 x clock x bus width
  int memoryBusBits;
  unsigned pciDeviceId;  // device << 16 | vendor (0x10de)
  unsigned char uuidTag;
};

// An HGX board of `count` GPUs of one model. `error` is set (and count 0) when TS_FAKE_GPU is unset or
// unreadable: every call then fails saying so.
struct Node {
  const Model* model = nullptr;
  int count = 0;
  std::string spec;   // TS_FAKE_GPU as given
  std::string error;  // why there is no node
};

inline constexpr int kMaxGpus = 8;
inline constexpr int kNvLinksPerGpu = 18;  // NVLink4 on Hopper SXM, every link to an NVSwitch
inline constexpr int kNvSwitches = 4;      // HGX H100/H200: four third-generation NVSwitches

Node currentNode();

// The CUDA version the fake driver supports, as cudaDriverGetVersion encodes it: TS_FAKE_CUDA_DRIVER (12020 for a
// 535 driver, 0 for none installed), else 13000 (the 580 series). Below the runtime's major version every device
// query fails with cudaErrorInsufficientDriver, as the real runtime does.
int driverCudaVersion();

// The PCI location of GPU `index` (0..7) and of NVSwitch `s`, as on a DGX H100: a bus each, domain 0.
unsigned gpuBus(int index);
unsigned switchBus(int s);
// The NVSwitch that NVLink `link` of a GPU reaches (5, 4, 4 and 5 links to the four switches).
int switchOfLink(int link);
// The CPU socket (and NUMA node) a GPU hangs from: GPUs 0-3 on socket 0, 4-7 on socket 1.
int socketOf(int index);

// The ordinals CUDA shows, in CUDA's order: every GPU of the node, or those CUDA_VISIBLE_DEVICES lists (read
// as CUDA reads it: indices until the first that is not one of the node's).
std::vector<int> visibleGpus(const Node& node);

// The text of a refused call ("fake GPU (TS_FAKE_GPU=h100:8): cudaMalloc runs nothing: ..."), also logged.
std::string refusal(const char* call);

// One line appended to $TS_FAKE_GPU_LOG (when set) for the calls a test wants to see, tagged with this
// process's rank as its launcher announced it: "rank=<r> pid=<p> <what>".
void logCall(const std::string& what);

}  // namespace fakegpu
