#pragma once
// The owners of CUDA resources. Each handle or allocation is taken in a constructor and given back in a
// destructor, so that a check that throws between the two (CUDA_CHECK, a UsageError) cannot leak it; every
// cudaMalloc, cudaHostAlloc, cudaHostRegister, stream, event and graph of trainscope is made here.
//
// Movable, not copyable. Device-side owners remember the GPU they were made on and make it current while
// they release (then restore the caller's), so they may be destroyed whatever GPU is current. Destructors
// ignore CUDA's status: they cannot throw, and a failure there means the context is already gone.
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"

namespace ts::cuda {

inline int currentDevice() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

namespace detail {
// `device` current for the scope, the previous one restored after; for the destructors below.
class OnDevice {
 public:
  explicit OnDevice(int device) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device)
      cudaSetDevice(device);
    else
      previous_ = -1;
  }
  ~OnDevice() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_ = -1;
};
}  // namespace detail

// Makes `device` current (checked). As the first member of a class, it does so before the members after
// it (streams, events, buffers) are made, which happens on the current GPU.
struct SelectDevice {
  explicit SelectDevice(int device) { CUDA_CHECK(cudaSetDevice(device)); }
};

// Bytes of device memory on the current GPU (cudaMalloc). Zero bytes allocate nothing (get() is null).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) {
    cudaError_t rc = cudaSuccess;
    *this = tryAllocate(bytes, rc);
    CUDA_CHECK(rc);
  }
  // For callers that word their own out-of-memory error: empty, and `error` set, when cudaMalloc fails
  // (CUDA's last error cleared, so that the next checked call does not report it again).
  static DeviceBuffer tryAllocate(std::size_t bytes, cudaError_t& error) {
    DeviceBuffer b;
    error = cudaSuccess;
    if (bytes == 0) return b;
    b.device_ = currentDevice();
    error = cudaMalloc(&b.p_, bytes);
    if (error != cudaSuccess) {
      cudaGetLastError();
      b.p_ = nullptr;
      return b;
    }
    b.bytes_ = bytes;
    return b;
  }
  // Takes back a pointer that release() gave away (device memory of the current GPU).
  static DeviceBuffer adopt(void* p) {
    DeviceBuffer b;
    b.p_ = p;
    b.device_ = currentDevice();
    return b;
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer(std::move(o)).swap(*this);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return p_ != nullptr; }
  // Frees now (the object is left empty).
  void reset() noexcept {
    if (!p_) return;
    detail::OnDevice on(device_);
    cudaFree(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  // Gives up ownership, for an allocator whose users keep raw pointers (the training arena, a
  // communicator's buffers); the pointer comes back through adopt().
  [[nodiscard]] void* release() noexcept {
    bytes_ = 0;
    return std::exchange(p_, nullptr);
  }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    std::swap(device_, o.device_);
  }
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
};

// A device array of n elements (at least one is allocated, so get() is never null); uploads and downloads
// are synchronous on `stream`.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : buffer_(std::max<std::size_t>(n, 1) * sizeof(T)), n_(n) {}
  T* get() const { return static_cast<T*>(buffer_.get()); }
  std::size_t size() const { return n_; }
  void upload(const std::vector<T>& h, cudaStream_t s) {
    CUDA_CHECK(cudaMemcpyAsync(get(), h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  std::vector<T> download(cudaStream_t s) const {
    std::vector<T> h(n_);
    CUDA_CHECK(cudaMemcpyAsync(h.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return h;
  }
  // 0xff bytes: NaN in float, so an element the op never writes fails the check.
  void poison(cudaStream_t s) { CUDA_CHECK(cudaMemsetAsync(get(), 0xff, n_ * sizeof(T), s)); }

 private:
  DeviceBuffer buffer_;
  std::size_t n_ = 0;
};

// Scratch from the stream-ordered allocator: cudaMallocAsync on `stream` (from the device's default memory
// pool, which keeps freed blocks: no device synchronisation, cheap after the first call, capturable in a
// CUDA graph), cudaFreeAsync on the same stream after the kernels that use it (freeAsync(), checked; the
// destructor frees unchecked only when an error skipped that).
class StreamOrderedBuffer {
 public:
  StreamOrderedBuffer(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    CUDA_CHECK(cudaMallocAsync(&p_, bytes, stream));
  }
  ~StreamOrderedBuffer() {
    if (p_) cudaFreeAsync(p_, stream_);
  }
  StreamOrderedBuffer(const StreamOrderedBuffer&) = delete;
  StreamOrderedBuffer& operator=(const StreamOrderedBuffer&) = delete;
  double* doubles() const { return static_cast<double*>(p_); }
  void freeAsync() { CUDA_CHECK(cudaFreeAsync(std::exchange(p_, nullptr), stream_)); }

 private:
  void* p_ = nullptr;
  cudaStream_t stream_;
};

// Page-locked host memory (cudaHostAlloc with `flags`); with cudaHostAllocMapped, devicePointer() is where
// kernels see it.
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  explicit PinnedHostBuffer(std::size_t bytes, unsigned flags = cudaHostAllocDefault) : bytes_(bytes) {
    CUDA_CHECK(cudaHostAlloc(&p_, bytes, flags));
  }
  ~PinnedHostBuffer() { reset(); }
  PinnedHostBuffer(PinnedHostBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedHostBuffer& operator=(PinnedHostBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }
  void* devicePointer() const {
    void* d = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&d, p_, 0));
    return d;
  }
  void reset() noexcept {
    if (p_) cudaFreeHost(p_);
    p_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// Existing host memory page-locked for the scope (cudaHostRegister), unregistered at its end.
class HostRegistration {
 public:
  HostRegistration(void* p, std::size_t bytes, unsigned flags = cudaHostRegisterDefault) : p_(p) {
    CUDA_CHECK(cudaHostRegister(p, bytes, flags));
  }
  ~HostRegistration() { cudaHostUnregister(p_); }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

 private:
  void* p_;
};

// A stream on the current GPU, non-blocking by default (it does not wait for the legacy default stream).
class Stream {
 public:
  explicit Stream(unsigned flags = cudaStreamNonBlocking) : device_(currentDevice()) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&s_, flags));
  }
  ~Stream() {
    if (!s_) return;
    detail::OnDevice on(device_);
    cudaStreamDestroy(s_);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)), device_(o.device_) {}
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
  int device_;
};

// An event on the current GPU; timing events by default, cudaEventDisableTiming for ones only waited on.
class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) : device_(currentDevice()) {
    CUDA_CHECK(cudaEventCreateWithFlags(&e_, flags));
  }
  ~Event() {
    if (!e_) return;
    detail::OnDevice on(device_);
    cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)), device_(o.device_) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t stream) const { CUDA_CHECK(cudaEventRecord(e_, stream)); }

 private:
  cudaEvent_t e_ = nullptr;
  int device_;
};

// n events on the current GPU.
inline std::vector<Event> makeEvents(std::size_t n, unsigned flags = cudaEventDefault) {
  std::vector<Event> events;
  events.reserve(n);
  for (std::size_t i = 0; i < n; ++i) events.emplace_back(flags);
  return events;
}

// Milliseconds from `start` to `end` (both recorded and complete).
inline float elapsedMs(const Event& start, const Event& end) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

// An instantiated CUDA graph (and the graph it came from), made by StreamCapture::end().
class Graph {
 public:
  Graph(Graph&& o) noexcept
      : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)), device_(o.device_) {}
  Graph& operator=(Graph&&) = delete;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    if (!graph_) return;
    detail::OnDevice on(device_);
    if (exec_) cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  void launch(cudaStream_t stream) const { CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  friend class StreamCapture;
  Graph(cudaGraph_t graph, int device) : graph_(graph), device_(device) { CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0)); }
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  int device_;
};

// Captures what is queued on `stream` (thread-local mode) until end(); a capture that an exception
// interrupts is ended and discarded, so the stream is usable again.
class StreamCapture {
 public:
  explicit StreamCapture(cudaStream_t stream) : stream_(stream), device_(currentDevice()) {
    CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  }
  ~StreamCapture() {
    if (!open_) return;
    detail::OnDevice on(device_);
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream_, &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();  // the error of an invalidated capture is not the next checked call's
  }
  StreamCapture(StreamCapture&& o) noexcept : stream_(o.stream_), device_(o.device_), open_(std::exchange(o.open_, false)) {}
  StreamCapture& operator=(StreamCapture&&) = delete;
  StreamCapture(const StreamCapture&) = delete;
  StreamCapture& operator=(const StreamCapture&) = delete;
  // Ends the capture (call with the capture's GPU current) and instantiates the graph.
  Graph end() {
    open_ = false;
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    try {
      return Graph(g, device_);
    } catch (...) {
      cudaGraphDestroy(g);
      throw;
    }
  }

 private:
  cudaStream_t stream_;
  int device_;
  bool open_ = true;
};

}  // namespace ts::cuda
