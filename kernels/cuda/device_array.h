#pragma once
// A device array with its size, freed at scope end; uploads and downloads are synchronous on `stream`.
#include <cstring>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"

namespace ts::cuda {

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) { CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T))); }
  ~DeviceArray() {
    if (p_) cudaFree(p_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  std::size_t size() const { return n_; }
  void upload(const std::vector<T>& h, cudaStream_t s) {
    CUDA_CHECK(cudaMemcpyAsync(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  std::vector<T> download(cudaStream_t s) const {
    std::vector<T> h(n_);
    CUDA_CHECK(cudaMemcpyAsync(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return h;
  }
  // 0xff bytes: NaN in float, so an element the op never writes fails the check.
  void poison(cudaStream_t s) { CUDA_CHECK(cudaMemsetAsync(p_, 0xff, n_ * sizeof(T), s)); }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// A non-blocking stream on the current device, destroyed at scope end.
class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace ts::cuda
