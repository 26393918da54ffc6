#include "kernels/cuda/device_timer.h"

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "kernels/cuda/cuda_check.h"

namespace ts::cuda {
namespace {

std::size_t flushBytes() {
  int l2 = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, currentDevice()));
  return 2 * static_cast<std::size_t>(l2 > 0 ? l2 : (50 << 20));
}

}  // namespace

DeviceTimer::DeviceTimer(cudaStream_t stream) : stream_(stream), flush_(flushBytes()) {}

std::vector<double> DeviceTimer::time(int iters, const std::function<void()>& launch, bool flushL2) {
  const std::vector<Event> ev = makeEvents(2 * static_cast<std::size_t>(iters));
  gate_.close(stream_);
  for (int i = 0; i < iters; ++i) {
    if (flushL2) CUDA_CHECK(cudaMemsetAsync(flush_.get(), i & 0xff, flush_.bytes(), stream_));
    ev[2 * i].record(stream_);
    launch();
    ev[2 * i + 1].record(stream_);
  }
  gate_.open();
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  gate_.checkOpenedInTime(fmt::format("timing {} iteration(s) by CUDA events", iters));
  heartbeat::beat();
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) us.push_back(1000.0 * elapsedMs(ev[2 * i], ev[2 * i + 1]));
  return us;
}

std::vector<double> DeviceTimer::timeGraph(int iters, int opsPerGraph, const std::function<void()>& launch) {
  StreamCapture capture(stream_);
  for (int k = 0; k < opsPerGraph; ++k) launch();
  const Graph graph = capture.end();
  graph.launch(stream_);  // warm-up replay
  std::vector<double> us = time(
      iters, [&] { graph.launch(stream_); }, false);
  for (auto& u : us) u /= opsPerGraph;
  return us;
}

}  // namespace ts::cuda
