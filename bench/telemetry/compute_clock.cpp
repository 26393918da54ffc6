#include "bench/telemetry/compute_clock.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "bench/inventory/nvml_loader.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace ts {

std::optional<double> cpuFrequencyMhz() {
  namespace fs = std::filesystem;
  std::error_code ec;
  double sum = 0;
  int n = 0;
  for (const auto& entry : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || name.find_first_not_of("0123456789", 3) != std::string::npos) continue;
    std::ifstream in(entry.path() / "cpufreq" / "scaling_cur_freq");
    double khz = 0;
    if (in >> khz && khz > 0) {
      sum += khz / 1e3;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

std::optional<double> gpuSmClockMhz([[maybe_unused]] int cudaOrdinal) {
#ifdef TRAINSCOPE_HAVE_CUDA
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), cudaOrdinal) == cudaSuccess) {
    static const nvml::Library lib;  // loaded once: nvmlInit can take a while on a large machine
    nvml::Device h{};
    unsigned mhz = 0;
    if (lib.ok() && lib.deviceByPciBusId(bus, &h) && lib.currentClockMhz(h, 1, &mhz) && mhz > 0) return double(mhz);
  }
  cudaGetLastError();
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, cudaOrdinal) == cudaSuccess && khz > 0) return khz / 1000.0;
  cudaGetLastError();
#endif
  return std::nullopt;
}

std::optional<double> readComputeClockMhz(int cudaOrdinal) {
  return cudaOrdinal >= 0 ? gpuSmClockMhz(cudaOrdinal) : cpuFrequencyMhz();
}

nlohmann::json computeClockMhz(int cudaOrdinal) {
  const std::optional<double> mhz = readComputeClockMhz(cudaOrdinal);
  return mhz ? nlohmann::json(*mhz) : nlohmann::json();
}

}  // namespace ts
