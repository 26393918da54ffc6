// Compiled into ts_kernels_cuda with CUDA, into ts_kernels_cpu without (kernels/CMakeLists.txt).
#include "kernels/cuda/device_count.h"

#ifdef TRAINSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/cuda/driver_diagnosis.h"
#endif

namespace ts::cuda {
#ifdef TRAINSCOPE_HAVE_CUDA
namespace {

std::optional<std::string> loadedKernelModule() {
  std::error_code ec;
  if (!std::filesystem::exists("/proc/driver/nvidia", ec)) return std::nullopt;
  std::ifstream in("/proc/driver/nvidia/version");
  std::stringstream text;
  text << in.rdbuf();
  return kernelModuleVersion(text.str());
}

// What the runtime and the host say when cudaGetDeviceCount failed with `rc`. The version queries need no
// driver (each answers from the runtime or 0), and their failure leaves the figure 0.
DriverFacts factsAfter(cudaError_t rc) {
  DriverFacts f;
  f.insufficientDriver = rc == cudaErrorInsufficientDriver;
  f.cudaText = cudaGetErrorString(rc);
  if (cudaDriverGetVersion(&f.driverCuda) != cudaSuccess) f.driverCuda = 0;
  if (cudaRuntimeGetVersion(&f.runtimeCuda) != cudaSuccess) f.runtimeCuda = CUDART_VERSION;
  f.kernelModule = loadedKernelModule();
  cudaGetLastError();
  return f;
}

}  // namespace
#endif

int usableDeviceCount(std::string* whyNone) {
#ifdef TRAINSCOPE_HAVE_CUDA
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    if (whyNone) *whyNone = whyNoDevice(factsAfter(rc));
    return 0;
  }
  if (count == 0 && whyNone) *whyNone = "the CUDA runtime sees no device";
  return count;
#else
  if (whyNone) *whyNone = "built without CUDA";
  return 0;
#endif
}

}  // namespace ts::cuda
