#include "workloads/device.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <tuple>

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "kernels/cuda/device_count.h"
#include "workloads/device_cuda.h"

namespace ts::wl {

#ifndef TRAINSCOPE_HAVE_CUDA
struct Device::CudaState {};  // never created without CUDA
#endif

Device::Device(int ordinal) : ordinal_(ordinal) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) cuda_ = std::make_unique<CudaState>(ordinal);
#endif
}

Device::~Device() = default;

std::unique_ptr<Device> Device::open(const DeviceSpec& spec) {
  if (!spec.cuda()) return std::unique_ptr<Device>(new Device(-1));
  const int ordinal = spec.ordinal();
#ifdef TRAINSCOPE_HAVE_CUDA
  const int count = cuda::usableDeviceCount();
  if (count == 0) throw UsageError(fmt::format("--device {}: no CUDA GPU is usable on this host", spec.name()));
  if (ordinal >= count)
    throw UsageError(fmt::format("--device {}: this host has {} GPU(s) (cuda:0 .. cuda:{})", spec.name(), count, count - 1));
  return std::unique_ptr<Device>(new Device(ordinal));
#else
  (void)ordinal;
  throw UsageError(fmt::format("--device {}: this trainscope was built without CUDA", spec.name()));
#endif
}

std::uint64_t Device::hostMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), pageBytes = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageBytes <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(pageBytes);
}

Device& Device::hostCpu() {
  static Device cpu(-1);
  return cpu;
}

std::string Device::name() const {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) return fmt::format("cuda:{} ({})", ordinal_, cuda_->deviceName);
#endif
  return "cpu";
}

MemoryLimitExceeded::MemoryLimitExceeded(MemoryKind k, std::size_t n, std::size_t used, std::size_t cap)
    : UsageError(fmt::format("--memory-limit {}: {} more for {} with {} in use", formatBytes(cap), formatBytes(n), nameOf(k),
                             formatBytes(used))),
      kind(k),
      bytes(n),
      inUse(used),
      limit(cap) {}

void* Device::allocate(std::size_t bytes, MemoryKind kind) {
  const std::size_t n = bytes ? bytes : 1;
  std::lock_guard lock(memory_);
  if (limit_ && counters_.total + n > limit_) throw MemoryLimitExceeded(kind, n, counters_.total, limit_);
  void* p = nullptr;
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) p = cuda_->allocate(n, counters_.total);
#endif
  if (!cuda()) {
    p = n >= HostBlockCache::kMinBytes ? hostBlocks_.take(n) : std::calloc(1, n);
    if (!p) throw Error(fmt::format("out of host memory: {} bytes more ({} bytes taken so far)", n, counters_.total));
  }
  counters_.add(kind, n);
  blocks_[p] = {n, kind};
  return p;
}

void Device::release(void* p) {
  if (!p) return;
  std::lock_guard lock(memory_);
  const auto it = blocks_.find(p);
  if (it == blocks_.end()) throw Error("internal: Device::release of memory it did not allocate");
  counters_.remove(it->second.second, it->second.first);
  blocks_.erase(it);
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) {
    cuda_->release(p);
    return;
  }
#endif
  if (!hostBlocks_.give(p)) std::free(p);
}

void Device::upload(void* dst, const void* src, std::size_t bytes) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) return cuda_->copy(dst, src, bytes, /*toHost=*/false);
#endif
  std::memcpy(dst, src, bytes);
}

void Device::download(void* dst, const void* src, std::size_t bytes) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) return cuda_->copy(dst, src, bytes, /*toHost=*/true);
#endif
  std::memcpy(dst, src, bytes);
}

void Device::copy(void* dst, const void* src, std::size_t bytes) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) return cuda_->copyOnDevice(dst, src, bytes);
#endif
  std::memmove(dst, src, bytes);
}

void Device::zero(void* p, std::size_t bytes) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) return cuda_->zero(p, bytes);
#endif
  std::memset(p, 0, bytes);
}

void Device::synchronize() {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) cuda_->synchronize();
#endif
}

void Device::setMatmulPrecision(Precision p) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) {
    cuda_->matmul = p;
    return;
  }
#endif
  if (p == Precision::kTF32)
    throw UsageError("--precision tf32: TF32 is a GPU tensor-core mode; the CPU trains in float32, bfloat16 or float16");
}

void* Device::stream() const {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda()) return cuda_->stream.get();
#endif
  return nullptr;
}

}  // namespace ts::wl
