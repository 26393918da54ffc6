#pragma once
// CUDA_CHECK: every CUDA runtime call goes through here; a failure becomes a ts::Error naming the call,
// CUDA's error name and text, and the active context (op, size, rank). Out of memory reads as such.
#include <cuda_runtime_api.h>

#include <string>

#include "base/error.h"

#define CUDA_CHECK(call)                                                                                   \
  do {                                                                                                     \
    const cudaError_t ts_cuda_rc_ = (call);                                                                \
    if (ts_cuda_rc_ != cudaSuccess)                                                                        \
      throw ::ts::errorInContext(std::string(#call) + " failed: " + cudaGetErrorName(ts_cuda_rc_) + " (" + \
                                 cudaGetErrorString(ts_cuda_rc_) + ")");                                   \
  } while (0)
