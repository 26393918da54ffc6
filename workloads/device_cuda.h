#pragma once
// The CUDA side of a Device: its stream, cuBLASLt, the cuDNN convolutions by shape, and checked memory
// calls. Only compiled with CUDA; device.cpp and device_ops.cpp include it under TRAINSCOPE_HAVE_CUDA.
#ifdef TRAINSCOPE_HAVE_CUDA
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include <cuda_runtime_api.h>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_resources.h"
#include "kernels/cuda/gemm.h"
#ifdef TRAINSCOPE_HAVE_CUDNN
#include "kernels/cuda/convolution.h"
#endif
#include "workloads/device.h"

namespace ts::wl {

struct Device::CudaState {
  explicit CudaState(int ordinal);                       // makes the GPU current
  void* allocate(std::size_t bytes, std::size_t inUse);  // zeroed; Error naming the sizes when out of memory
  void release(void* p);
  void copy(void* dst, const void* src, std::size_t bytes, bool toHost);
  void copyOnDevice(void* dst, const void* src, std::size_t bytes);
  void zero(void* p, std::size_t bytes);
  void synchronize();

  // Made in this order (the GPU selected first), destroyed in reverse: the convolutions, the 16-bit
  // buffers, cuBLASLt, then the stream they run on.
  cuda::SelectDevice select;
  int ordinal;
  std::string deviceName;
  cuda::Stream stream;
  std::unique_ptr<cuda::Blas> blas;
  Precision matmul = Precision::kFloat32;  // Device::setMatmulPrecision
  // 16-bit copies of GEMM inputs (bfloat16 / float16 matmuls), grown on demand.
  cuda::DeviceBuffer halfA, halfB;
  // A 16-bit copy of `elements` floats at `src` in one of the two scratch buffers.
  const void* sixteenBit(const float* src, std::size_t elements, bool second);
#ifdef TRAINSCOPE_HAVE_CUDNN
  // One cuDNN convolution (descriptors, algorithms, workspace) per shape a model uses.
  cuda::Convolution& convolution(const cpu::Conv2dShape& s);
  std::map<std::tuple<int, int, int, int, int, int, int, int, int>, std::unique_ptr<cuda::Convolution>> convolutions;
#endif
};

}  // namespace ts::wl
#endif
