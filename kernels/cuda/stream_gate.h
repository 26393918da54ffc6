#pragma once
// A stream gate: a one-thread kernel that holds a stream until the host opens the gate, so that work
// queued behind it starts back to back and enqueue cost is not in the device timings. The kernel gives
// up by itself after maxWaitNs, so a gate the host never opens delays, but never hangs, the stream. A gate
// that gave up let the stream run while the host was still queuing: the intervals timed behind it then hold
// the host's gaps, so a timing checks checkOpenedInTime() and refuses to record them.
#include <cstdint>
#include <string_view>

#include <cuda_runtime_api.h>

#include "kernels/cuda/device_resources.h"

namespace ts::cuda {

class StreamGate {
 public:
  StreamGate();  // on the current device
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  void close(cudaStream_t stream, std::uint64_t maxWaitNs = kDefaultMaxWaitNs);  // enqueue the waiting kernel
  void open();                                                                   // let it finish
  // Once the stream has passed the gate (synchronized): whether the gate gave up before open().
  bool expired() const;
  // The same as an error: ts::Error naming `what` when the gate gave up, since the timings behind it include
  // the host's gaps. Call after synchronizing the stream.
  void checkOpenedInTime(std::string_view what) const;

  static constexpr std::uint64_t kDefaultMaxWaitNs = 1'000'000'000ull;

 private:
  PinnedHostBuffer words_;  // two ints, mapped: [0] open (host writes), [1] expired (the kernel writes)
  volatile int* host_ = nullptr;
  int* device_ = nullptr;
  std::uint64_t maxWaitNs_ = kDefaultMaxWaitNs;
};

}  // namespace ts::cuda
