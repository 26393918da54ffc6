#pragma once
// Where a model's tensors live and its ops run: the CPU, or one CUDA GPU with its stream, cuBLASLt handle
// and cuDNN convolutions. Layers hold a Device and call the ops in device_ops.h, which dispatch on it, so the
// model code is the same for both (docs/architecture.md "Backends"). Memory comes from the device through
// an Arena.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "base/precision.h"
#include "workloads/device_spec.h"
#include "workloads/host_block_cache.h"
#include "workloads/memory.h"

namespace ts::wl {

// An allocation refused by --memory-limit: what was asked for, of which kind, and what was in use.
class MemoryLimitExceeded : public UsageError {
 public:
  MemoryLimitExceeded(MemoryKind kind, std::size_t bytes, std::size_t inUse, std::size_t limit);
  MemoryKind kind;
  std::size_t bytes, inUse, limit;
};

class Device {
 public:
  // UsageError for a GPU that is not there, or CUDA asked of a build without it.
  static std::unique_ptr<Device> open(const DeviceSpec& spec);
  static Device& hostCpu();  // the process's CPU device (tests, host-side tensors)
  // The host's physical memory: the most the CPU device's allocations can ever take (0 where it cannot be read).
  static std::uint64_t hostMemoryBytes();
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  bool cuda() const { return ordinal_ >= 0; }
  int ordinal() const { return ordinal_; }
  std::string name() const;  // "cpu", "cuda:0 (NVIDIA H100 80GB HBM3)"

  // Zero-filled memory owned by the caller (Arena frees it with release()), counted under `kind`.
  // Thread-safe: the loader thread allocates its staging buffers while the model trains. Beyond the
  // memory limit: MemoryLimitExceeded, before anything is taken.
  void* allocate(std::size_t bytes, MemoryKind kind);
  void release(void* p);
  void upload(void* dst, const void* src, std::size_t bytes);    // host -> device (a plain copy on the CPU)
  void download(void* dst, const void* src, std::size_t bytes);  // device -> host, complete on return
  void copy(void* dst, const void* src, std::size_t bytes);      // device -> device
  void zero(void* p, std::size_t bytes);
  void synchronize();
  // What is in use by kind, and the peaks since the last resetPeaks() (the trainer resets them after
  // setup, so the record's peaks are the steps').
  MemoryCounters memory() const {
    std::lock_guard lock(memory_);
    return counters_;
  }
  void resetPeaks() {
    std::lock_guard lock(memory_);
    counters_.resetPeaks();
  }
  // The most this device may hand out at once (--memory-limit; 0: no limit but the hardware's).
  void setMemoryLimit(std::size_t bytes) { limit_ = bytes; }
  std::size_t memoryLimit() const { return limit_; }
  // The arithmetic of the matmuls (GEMMs) on CUDA: float32; tf32 (TF32 tensor cores); bfloat16 / float16
  // (the inputs converted to the 16-bit format, float32 accumulation and output: tensor-core GEMMs). On
  // the CPU float32 GEMMs serve every precision (the 16-bit rounding is emulated around them), and tf32
  // is a UsageError.
  void setMatmulPrecision(Precision p);  // device memory taken (the arena never frees during a run)

  // CUDA only: the stream (a cudaStream_t) and the per-device library state the ops use.
  void* stream() const;
  struct CudaState;
  CudaState& cudaState() const { return *cuda_; }

 private:
  explicit Device(int ordinal);
  int ordinal_ = -1;           // -1: the CPU
  mutable std::mutex memory_;  // guards the counters and the blocks
  MemoryCounters counters_;
  std::unordered_map<void*, std::pair<std::size_t, MemoryKind>> blocks_;  // what each allocation counted
  HostBlockCache hostBlocks_;  // the CPU's large blocks, kept for reuse (host_block_cache.h)
  std::size_t limit_ = 0;
  std::unique_ptr<CudaState> cuda_;
};

}  // namespace ts::wl
