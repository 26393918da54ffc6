#include "fake_node.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace fakegpu {
namespace {

// nvidia-smi's memory totals (81559 MiB, 143771 MiB); CUDA's deviceQuery L2 sizes (50 MiB, 60 MiB); the
// boost clock of both is 1980 MHz; HBM3 at 2619 MHz on 5120 bits is the H100's 3.35 TB/s, HBM3e at 3201 MHz
// on 6144 bits the H200's 4.8 TB/s; PCI device ids 0x2330 and 0x2335.
constexpr Model kModels[] = {
    {"h100", "NVIDIA H100 80GB HBM3", 81559ull << 20, 50 << 20, 1980, 2619, 5120, 0x233010de, 0x10},
    {"h200", "NVIDIA H200", 143771ull << 20, 60 << 20, 1980, 3201, 6144, 0x233510de, 0x20},
};

// DGX H100's GPU buses, in CUDA's (PCI) order.
constexpr unsigned kGpuBuses[kMaxGpus] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

Node currentNode() {
  Node n;
  const char* spec = env("TS_FAKE_GPU");
  if (!spec) {
    n.error = "TS_FAKE_GPU is not set (say h100:8, h200:1, ...: <model>:<GPUs>)";
    return n;
  }
  n.spec = spec;
  const char* colon = std::strchr(spec, ':');
  const std::string key = colon ? std::string(spec, colon) : std::string(spec);
  for (const Model& m : kModels)
    if (key == m.key) n.model = &m;
  char* end = nullptr;
  const long count = colon ? std::strtol(colon + 1, &end, 10) : -1;
  if (!n.model || !colon || end == colon + 1 || *end != '\0' || count < 0 || count > kMaxGpus) {
    n.model = nullptr;
    n.error = "TS_FAKE_GPU=" + n.spec + " is not <model>:<GPUs> with model h100 or h200 and 0 to 8 GPUs";
    return n;
  }
  n.count = static_cast<int>(count);
  return n;
}

int driverCudaVersion() {
  const char* v = env("TS_FAKE_CUDA_DRIVER");
  return v ? std::atoi(v) : 13000;
}

unsigned gpuBus(int index) { return kGpuBuses[index]; }
unsigned switchBus(int s) { return 0x05 + static_cast<unsigned>(s); }

int switchOfLink(int link) {
  if (link < 5) return 0;
  if (link < 9) return 1;
  if (link < 13) return 2;
  return 3;
}

int socketOf(int index) { return index < kMaxGpus / 2 ? 0 : 1; }

std::vector<int> visibleGpus(const Node& node) {
  std::vector<int> out;
  const char* list = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!list) {
    for (int i = 0; i < node.count; ++i) out.push_back(i);
    return out;
  }
  const char* p = list;
  while (*p) {
    char* end = nullptr;
    const long i = std::strtol(p, &end, 10);
    if (end == p || i < 0 || i >= node.count) break;  // CUDA stops at the first entry it cannot use
    out.push_back(static_cast<int>(i));
    p = end;
    if (*p == ',') ++p;
  }
  return out;
}

std::string refusal(const char* call) {
  logCall(std::string("refused ") + call);
  const Node n = currentNode();
  return "fake GPU (TS_FAKE_GPU=" + (n.spec.empty() ? std::string("unset") : n.spec) + "): " + call +
         " runs nothing; the fake GPU answers device queries only";
}

void logCall(const std::string& what) {
  const char* path = env("TS_FAKE_GPU_LOG");
  if (!path) return;
  const char* rank = nullptr;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK"})
    if (!rank) rank = env(name);
  const std::string line = "rank=" + std::string(rank ? rank : "-") + " pid=" + std::to_string(::getpid()) + " " + what + "\n";
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // One write per line with O_APPEND: the lines of processes that share the log do not interleave.
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace fakegpu
