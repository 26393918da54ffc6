// Compiled into ts_kernels_cuda with CUDA, into ts_kernels_cpu without (kernels/CMakeLists.txt).
#include "kernels/cuda/device_count.h"

#ifdef TRAINSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace ts::cuda {

int usableDeviceCount(std::string* whyNone) {
#ifdef TRAINSCOPE_HAVE_CUDA
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    if (whyNone) *whyNone = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
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
