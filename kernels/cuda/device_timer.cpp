#include "kernels/cuda/device_timer.h"

#include "base/heartbeat.h"
#include "kernels/cuda/cuda_check.h"

namespace ts::cuda {
namespace {

// RAII for a batch of events on the current device.
struct Events {
  std::vector<cudaEvent_t> e;
  explicit Events(std::size_t n) : e(n, nullptr) {
    for (auto& x : e) CUDA_CHECK(cudaEventCreate(&x));
  }
  ~Events() {
    for (auto x : e)
      if (x) cudaEventDestroy(x);
  }
  float ms(std::size_t a, std::size_t b) const {
    float v = 0;
    CUDA_CHECK(cudaEventElapsedTime(&v, e[a], e[b]));
    return v;
  }
};

}  // namespace

DeviceTimer::DeviceTimer(cudaStream_t stream) : stream_(stream) {
  int device = 0, l2 = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  flushBytes_ = 2 * static_cast<std::size_t>(l2 > 0 ? l2 : (50 << 20));
  CUDA_CHECK(cudaMalloc(&flush_, flushBytes_));
}

DeviceTimer::~DeviceTimer() {
  if (flush_) cudaFree(flush_);
}

std::vector<double> DeviceTimer::time(int iters, const std::function<void()>& launch, bool flushL2) {
  Events ev(2 * static_cast<std::size_t>(iters));
  gate_.close(stream_);
  for (int i = 0; i < iters; ++i) {
    if (flushL2) CUDA_CHECK(cudaMemsetAsync(flush_, i & 0xff, flushBytes_, stream_));
    CUDA_CHECK(cudaEventRecord(ev.e[2 * i], stream_));
    launch();
    CUDA_CHECK(cudaEventRecord(ev.e[2 * i + 1], stream_));
  }
  gate_.open();
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  heartbeat::beat();
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) us.push_back(1000.0 * ev.ms(2 * i, 2 * i + 1));
  return us;
}

std::vector<double> DeviceTimer::timeGraph(int iters, int opsPerGraph, const std::function<void()>& launch) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < opsPerGraph; ++k) launch();
  CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  const cudaError_t rc = cudaGraphInstantiate(&exec, graph, 0);
  if (rc != cudaSuccess) {
    cudaGraphDestroy(graph);
    CUDA_CHECK(rc);
  }
  std::vector<double> us;
  try {
    CUDA_CHECK(cudaGraphLaunch(exec, stream_));  // warm-up replay
    us = time(iters, [&] { CUDA_CHECK(cudaGraphLaunch(exec, stream_)); }, false);
  } catch (...) {
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    throw;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (auto& u : us) u /= opsPerGraph;
  return us;
}

}  // namespace ts::cuda
