// The CUDA state of a Device (see device_cuda.h); compiled only with CUDA.
#include "workloads/device_cuda.h"

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cuda/ops.h"

namespace ts::wl {

int cudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

Device::CudaState::CudaState(int o) : ordinal(o) {
  CUDA_CHECK(cudaSetDevice(ordinal));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  deviceName = prop.name;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  blas = std::make_unique<cuda::Blas>();
}

const void* Device::CudaState::sixteenBit(const float* src, std::size_t elements, bool second) {
  void*& buf = second ? halfB : halfA;
  std::size_t& have = second ? halfBBytes : halfABytes;
  const std::size_t need = elements * 2;
  if (need > have) {
    if (buf) CUDA_CHECK(cudaFree(buf));
    buf = nullptr;
    have = 0;
    CUDA_CHECK(cudaMalloc(&buf, need));
    have = need;
  }
  auto* out = static_cast<std::uint16_t*>(buf);
  if (matmul == Precision::kBFloat16) cuda::castToBFloat16(out, src, elements, stream);
  else cuda::castToHalf(out, src, elements, stream);
  return buf;
}

Device::CudaState::~CudaState() {
  if (halfA) cudaFree(halfA);
  if (halfB) cudaFree(halfB);
#ifdef TRAINSCOPE_HAVE_CUDNN
  convolutions.clear();
#endif
  blas.reset();
  if (stream) cudaStreamDestroy(stream);
}

void* Device::CudaState::allocate(std::size_t bytes, std::size_t inUse) {
  void* p = nullptr;
  const cudaError_t rc = cudaMalloc(&p, bytes);
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    throw Error(fmt::format("out of memory on cuda:{}: {} bytes more after {} bytes for this model ({} of {} bytes free): lower --batch or the model size",
                            ordinal, bytes, inUse, free, total));
  }
  CUDA_CHECK(rc);
  CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream));
  return p;
}

void Device::CudaState::release(void* p) { cudaFree(p); }

void Device::CudaState::copy(void* dst, const void* src, std::size_t bytes, bool toHost) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, toHost ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));  // the host buffer may be reused or read right after
}

void Device::CudaState::copyOnDevice(void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

void Device::CudaState::zero(void* p, std::size_t bytes) { CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream)); }

void Device::CudaState::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream)); }

#ifdef TRAINSCOPE_HAVE_CUDNN
cuda::Convolution& Device::CudaState::convolution(const cpu::Conv2dShape& s) {
  const auto key = std::make_tuple(s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.stride, s.pad);
  auto& slot = convolutions[key];
  if (!slot) slot = std::make_unique<cuda::Convolution>(s, cuda::ConvolutionOptions{});
  return *slot;
}
#endif

}  // namespace ts::wl
