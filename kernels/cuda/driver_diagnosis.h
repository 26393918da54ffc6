#pragma once
// Why CUDA found no device, in the words a newcomer needs (issue #35): "no NVIDIA driver" (nothing installed)
// is told apart from "driver too old" (installed, but for an older CUDA than this build's runtime), which
// the runtime reports alike ("CUDA driver version is insufficient for CUDA runtime version"). The decision
// is a pure function of what was observed, so that every case is tested on any host.
#include <optional>
#include <string>

namespace ts::cuda {

struct DriverFacts {
  bool insufficientDriver = false;  // cudaGetDeviceCount said cudaErrorInsufficientDriver
  std::string cudaText;             // what cudaGetDeviceCount said (cudaGetErrorString)
  int driverCuda = 0;               // cudaDriverGetVersion: 1000*major + 10*minor; 0 when no driver is installed
  int runtimeCuda = 0;              // this build's runtime (cudaRuntimeGetVersion), same encoding
  // The kernel module as /proc/driver/nvidia/version names it ("580.65.06"); "" when loaded but its version
  // is unreadable; nullopt when there is no /proc/driver/nvidia (no module loaded).
  std::optional<std::string> kernelModule;
};

// The reason usableDeviceCount() gives for no device: "no NVIDIA driver: ...", "NVIDIA driver too old: ...",
// or "cudaGetDeviceCount: <CUDA's text>" with what else is known.
std::string whyNoDevice(const DriverFacts& facts);

// The kernel module's version in the text of /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64
// Kernel Module  580.65.06  Sun Jul 27 ..."), or "" when it names none.
std::string kernelModuleVersion(const std::string& procText);

// "13.0" for 13000.
std::string cudaVersionText(int version);

}  // namespace ts::cuda
