// GPUs through the CUDA runtime (name, UUID, PCI bus, memory, SMs, clocks) and the GPU-to-GPU link
// matrix through NVML (NVLink count, or the PCIe path), plus the versions of the GPU libraries.
#include <fmt/format.h>

#include "bench/inventory/inventory.h"
#include "bench/inventory/nvml_loader.h"
#include "kernels/cuda/device_count.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda/cublaslt_library.h"
#endif
#ifdef TRAINSCOPE_HAVE_CUDNN
#include <cudnn.h>
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
#include <nccl.h>
#endif

namespace ts {
namespace {

#ifdef TRAINSCOPE_HAVE_CUDA
std::string uuidString(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  return fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

std::string versionString(int v, int majorDiv, int minorDiv, int minorMod) {
  return fmt::format("{}.{}", v / majorDiv, (v / minorDiv) % minorMod);
}

nlohmann::json linkMatrix(const nlohmann::json& devices) {
  nvml::Library lib;
  if (!lib.ok()) return {{"reason", lib.reason()}};
  const std::size_t n = devices.size();
  std::vector<nvml::Device> handles(n);
  std::vector<nvml::PciInfo> pci(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!lib.deviceByPciBusId(devices[i]["pci_bus_id"].get<std::string>(), &handles[i]) || !lib.pciInfo(handles[i], &pci[i]))
      return {{"reason", fmt::format("NVML does not know GPU {}", i)}};
  }
  nlohmann::json m = nlohmann::json::array();
  for (std::size_t i = 0; i < n; ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) {
        row.push_back("X");
        continue;
      }
      const int nv = lib.nvlinksBetween(handles[i], handles[j], pci[j]);
      if (nv > 0) {
        row.push_back(fmt::format("NV{}", nv));
        continue;
      }
      int level = -1;
      row.push_back(lib.commonAncestor(handles[i], handles[j], &level) ? nvml::topologyName(level) : "?");
    }
    m.push_back(row);
  }
  return {{"matrix", m}, {"source", "nvml"}};
}
#endif

}  // namespace

nlohmann::json collectGpuInventory() {
  nlohmann::json g = {{"available", false}, {"devices", nlohmann::json::array()}, {"links", nlohmann::json::object()}};
#ifdef TRAINSCOPE_HAVE_CUDA
  std::string whyNone;
  const int count = cuda::usableDeviceCount(&whyNone);
  if (count == 0) {
    g["reason"] = whyNone;
    g["links"] = {{"reason", "no GPUs"}};
    return g;
  }
  nvml::Library lib;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof(bus), i);
    int smClockKhz = 0, memClockKhz = 0;
    cudaDeviceGetAttribute(&smClockKhz, cudaDevAttrClockRate, i);
    cudaDeviceGetAttribute(&memClockKhz, cudaDevAttrMemoryClockRate, i);
    nlohmann::json d = {{"index", i},
                        {"name", p.name},
                        {"uuid", uuidString(p.uuid)},
                        {"pci_bus_id", bus},
                        {"memory_bytes", static_cast<std::uint64_t>(p.totalGlobalMem)},
                        {"sm_count", p.multiProcessorCount},
                        {"compute_capability", fmt::format("{}.{}", p.major, p.minor)},
                        {"sm_clock_max_mhz", smClockKhz / 1000},
                        {"mem_clock_max_mhz", memClockKhz / 1000},
                        {"pcie_generation", nullptr},
                        {"pcie_width", nullptr}};
    nvml::Device h{};
    unsigned mhz = 0;
    if (lib.ok() && lib.deviceByPciBusId(bus, &h)) {
      if (lib.maxClockMhz(h, 1, &mhz)) d["sm_clock_max_mhz"] = mhz;
      if (lib.maxClockMhz(h, 2, &mhz)) d["mem_clock_max_mhz"] = mhz;
      unsigned gen = 0, width = 0;
      if (lib.pcieLink(h, &gen, &width)) {
        d["pcie_generation"] = gen;
        d["pcie_width"] = width;
      }
    }
    g["devices"].push_back(d);
  }
  g["available"] = !g["devices"].empty();
  g["reason"] = g["available"].get<bool>() ? "" : "no device answered cudaGetDeviceProperties";
  g["links"] = linkMatrix(g["devices"]);
#else
  g["reason"] = "built without CUDA";
  g["links"] = {{"reason", "built without CUDA"}};
#endif
  return g;
}

nlohmann::json collectGpuVersions() {
  nlohmann::json v = {{"driver", nullptr}, {"cuda_driver", nullptr}, {"cuda_runtime", nullptr},
                      {"cublas", nullptr}, {"cudnn", nullptr},       {"nccl", nullptr}};
#ifdef TRAINSCOPE_HAVE_CUDA
  int x = 0;
  if (cudaDriverGetVersion(&x) == cudaSuccess && x > 0) v["cuda_driver"] = versionString(x, 1000, 10, 100);
  if (cudaRuntimeGetVersion(&x) == cudaSuccess) v["cuda_runtime"] = versionString(x, 1000, 10, 100);
  // cuBLAS: the library the GPU GEMMs load, asked only where a GPU can use it. Loading it costs a process 0.1 s of
  // CPU (kernels/cuda/cublaslt_library.h), which the runs of a host without a usable GPU would pay for nothing.
  if (cuda::usableDeviceCount() > 0 && cuda::cublasLtAvailable()) {
    const std::size_t lt = cublasLtGetVersion();  // major*10000 + minor*100 + patch
    v["cublas"] = fmt::format("{}.{}.{}", lt / 10000, (lt / 100) % 100, lt % 100);
  }
  nvml::Library lib;
  if (lib.ok()) v["driver"] = lib.driverVersion();
#endif
#ifdef TRAINSCOPE_HAVE_CUDNN
  const std::size_t dnn = cudnnGetVersion();  // major*10000 + minor*100 + patch (cuDNN 9)
  v["cudnn"] = fmt::format("{}.{}.{}", dnn / 10000, (dnn / 100) % 100, dnn % 100);
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  int nv = 0;
  if (ncclGetVersion(&nv) == ncclSuccess) v["nccl"] = fmt::format("{}.{}.{}", nv / 10000, (nv / 100) % 100, nv % 100);
#endif
  return v;
}

}  // namespace ts
