#pragma once
// A stream gate: a one-thread kernel that holds a stream until the host opens the gate, so that work
// queued behind it starts back to back and enqueue cost is not in the device timings. The kernel gives
// up by itself after maxWaitNs, so a gate the host never opens delays, but never hangs, the stream.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/cuda/device_resources.h"

namespace ts::cuda {

class StreamGate {
 public:
  StreamGate();  // on the current device
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  void close(cudaStream_t stream, std::uint64_t maxWaitNs = 1'000'000'000ull);  // enqueue the waiting kernel
  void open();                                                                  // let it finish

 private:
  PinnedHostBuffer flag_;  // one int, mapped
  volatile int* hostFlag_ = nullptr;
  int* deviceFlag_ = nullptr;
};

}  // namespace ts::cuda
