#pragma once
// Device time of a kernel (or a few) on one stream, by CUDA events. The stream is gated while the
// iterations are queued, so host enqueue cost is not in any interval; with flushL2, a write of twice the
// L2 size runs between iterations (outside the timed intervals) so that no iteration finds its inputs
// still cached by the previous one. For kernels too short for events to resolve, timeGraph captures
// opsPerGraph launches in a CUDA graph and times replays.
#include <functional>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernels/cuda/device_resources.h"
#include "kernels/cuda/stream_gate.h"

namespace ts::cuda {

class DeviceTimer {
 public:
  explicit DeviceTimer(cudaStream_t stream);
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;
  // Microseconds per iteration of `launch` (which queues work on the stream).
  std::vector<double> time(int iters, const std::function<void()>& launch, bool flushL2);
  // Microseconds per launch, from iters replays of a graph of opsPerGraph launches.
  std::vector<double> timeGraph(int iters, int opsPerGraph, const std::function<void()>& launch);

 private:
  cudaStream_t stream_;
  StreamGate gate_;
  DeviceBuffer flush_;  // twice the L2
};

}  // namespace ts::cuda
