// Compiled in every build (kernels/CMakeLists.txt): the decision needs no CUDA, only what was observed.
#include "kernels/cuda/driver_diagnosis.h"

#include <fmt/format.h>

#include <cctype>
#include <sstream>

namespace ts::cuda {
namespace {

// The oldest driver branch of each CUDA major version: CUDA's release notes, "CUDA Toolkit and Minimum
// Required Driver Version for CUDA Minor Version Compatibility" (12.x: 525, 13.x: 580).
const char* minimumBranch(int cudaMajor) {
  switch (cudaMajor) {
    case 12:
      return "R525";
    case 13:
      return "R580";
    default:
      return nullptr;
  }
}

std::string needed(int runtimeCuda) {
  const int major = runtimeCuda / 1000;
  const char* branch = minimumBranch(major);
  return fmt::format("this build's CUDA {} runtime needs a driver for CUDA {}.x{}", cudaVersionText(runtimeCuda), major,
                     branch ? fmt::format(", {} or newer", branch) : std::string());
}

// The loaded kernel module as a clause: "kernel module 580.65.06 is loaded".
std::string loaded(const std::string& version) {
  return version.empty() ? "an NVIDIA kernel module is loaded" : "kernel module " + version + " is loaded";
}

}  // namespace

std::string cudaVersionText(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

std::string kernelModuleVersion(const std::string& procText) {
  // "Kernel Module  580.65.06" or, for the open modules, "Open Kernel Module for x86_64  575.57.08": the
  // first word after the tag that is a dotted number.
  const std::string tag = "Kernel Module";
  const std::size_t at = procText.find(tag);
  if (at == std::string::npos) return "";
  std::istringstream words(procText.substr(at + tag.size(), procText.find('\n', at) - at - tag.size()));
  for (std::string w; words >> w;)
    if (std::isdigit(static_cast<unsigned char>(w[0])) && w.find('.') != std::string::npos &&
        w.find_first_not_of("0123456789.") == std::string::npos)
      return w;
  return "";
}

std::string whyNoDevice(const DriverFacts& f) {
  // cudaDriverGetVersion answers 0 when libcuda.so.1 (the driver's user-space library) cannot be loaded.
  if (f.driverCuda == 0) {
    if (!f.kernelModule)
      return "no NVIDIA driver: neither its library libcuda.so.1 nor its kernel module (/proc/driver/nvidia) is present; " +
             needed(f.runtimeCuda);
    return fmt::format(
        "no NVIDIA driver library: {} but libcuda.so.1 is not found; in a container, start it with the NVIDIA "
        "container toolkit's --gpus; {}",
        loaded(*f.kernelModule), needed(f.runtimeCuda));
  }
  if (f.insufficientDriver)
    return fmt::format("NVIDIA driver too old: it supports CUDA {}{}; {}", cudaVersionText(f.driverCuda),
                       f.kernelModule && !f.kernelModule->empty() ? ", kernel module " + *f.kernelModule : std::string(),
                       needed(f.runtimeCuda));
  return "cudaGetDeviceCount: " + f.cudaText +
         (f.kernelModule ? "" : "; no NVIDIA kernel module is loaded: no /proc/driver/nvidia");
}

}  // namespace ts::cuda
