// The CUDA state of a Device (see device_cuda.h); compiled only with CUDA.
#include "workloads/device_cuda.h"

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cuda/cuda_ops.h"

namespace ts::wl {

Device::CudaState::CudaState(int o) : select(o), ordinal(o) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  deviceName = prop.name;
  blas = std::make_unique<cuda::Blas>();
}

const void* Device::CudaState::sixteenBit(const float* src, std::size_t elements, bool second) {
  cuda::DeviceBuffer& buf = second ? halfB : halfA;
  const std::size_t need = elements * 2;
  if (need > buf.bytes()) {
    buf.reset();  // before the larger one is taken
    buf = cuda::DeviceBuffer(need);
  }
  auto* out = static_cast<std::uint16_t*>(buf.get());
  if (matmul == Precision::kBFloat16)
    cuda::castToBFloat16(out, src, elements, stream.get());
  else
    cuda::castToHalf(out, src, elements, stream.get());
  return buf.get();
}

void* Device::CudaState::allocate(std::size_t bytes, std::size_t inUse) {
  cudaError_t rc = cudaSuccess;
  cuda::DeviceBuffer p = cuda::DeviceBuffer::tryAllocate(bytes, rc);
  if (rc == cudaErrorMemoryAllocation) {
    std::size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    throw Error(
        fmt::format("out of memory on cuda:{}: {} bytes more after {} bytes for this model ({} of {} bytes free): lower --batch "
                    "or the model size",
                    ordinal, bytes, inUse, free, total));
  }
  CUDA_CHECK(rc);
  CUDA_CHECK(cudaMemsetAsync(p.get(), 0, bytes, stream.get()));
  return p.release();  // the arena owns it now, and gives it back through release()
}

void Device::CudaState::release(void* p) { cuda::DeviceBuffer::adopt(p).reset(); }

void Device::CudaState::copy(void* dst, const void* src, std::size_t bytes, bool toHost) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, toHost ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, stream.get()));
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));  // the host buffer may be reused or read right after
}

void Device::CudaState::copyOnDevice(void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream.get()));
}

void Device::CudaState::zero(void* p, std::size_t bytes) { CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream.get())); }

void Device::CudaState::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream.get())); }

#ifdef TRAINSCOPE_HAVE_CUDNN
cuda::Convolution& Device::CudaState::convolution(const cpu::Conv2dShape& s) {
  const auto key = std::make_tuple(s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.stride, s.pad);
  auto& slot = convolutions[key];
  if (!slot) slot = std::make_unique<cuda::Convolution>(s, cuda::ConvolutionOptions{});
  return *slot;
}
#endif

}  // namespace ts::wl
