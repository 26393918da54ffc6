// The GPU's ceilings (bench/kernels/ceilings.h): cuBLASLt GEMMs and device copies, timed by CUDA events as the
// kernels are (bench/kernels/kernels_runner.cpp's timeCase): a GEMM with the L2 flushed before it, the L2 copy as
// graph replays with nothing flushed (as kernels under 20 us are timed), the device-memory copy plain. The copies
// are an SM kernel (cuda::smCopy, 16-byte loads and stores by every SM), not the copy engine: the kernels they
// judge move their bytes through the SMs, and the copy engine reaches neither the SMs' L2 bandwidth nor, on
// some parts, their share of HBM's.
#include <memory>

#include <fmt/format.h>

#include "base/units.h"
#include "bench/kernels/ceilings.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_resources.h"
#include "kernels/cuda/device_timer.h"
#include "kernels/cuda/memory_stream.h"
#endif

namespace ts {

#ifdef TRAINSCOPE_HAVE_CUDA
namespace {

// A device copy of workingSet bytes (two buffers of half each, whole 16-byte words) by an SM kernel on
// `device`; graphOps > 0 times it as replays of a graph of that many copies (the data stays in L2), 0 one
// copy at a time.
CeilingSpec deviceCopySpec(MemoryLevel level, double workingSet, double capacity, int device, int graphOps) {
  const std::size_t halfBytes = static_cast<std::size_t>(workingSet / 2) / 16 * 16;
  const std::string half = formatBytes(halfBytes);
  CeilingSpec s = memoryCeilingSpec(
      level, workingSet, capacity,
      graphOps > 0 ? fmt::format("SM copy kernel of {}, read + write, as graph replays of {} (L2-resident)", half, graphOps)
                   : fmt::format("SM copy kernel of {}, read + write", half));
  s.cudaDevice = device;
  s.make = [halfBytes, device, graphOps] {
    CUDA_CHECK(cudaSetDevice(device));
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    struct Buffers {
      std::size_t bytes;
      int sms;
      cuda::Stream stream;
      cuda::DeviceArray<unsigned char> a, b;
      cuda::DeviceTimer timer;
      Buffers(std::size_t n, int smCount) : bytes(n), sms(smCount), a(n), b(n), timer(stream.get()) {}
      void copy() { cuda::smCopy(b.get(), a.get(), bytes, sms, stream.get()); }
    };
    auto buf = std::make_shared<Buffers>(halfBytes, sms);
    CUDA_CHECK(cudaMemsetAsync(buf->a.get(), 1, buf->bytes, buf->stream.get()));
    CUDA_CHECK(cudaStreamSynchronize(buf->stream.get()));
    auto time = [buf, graphOps] {
      return graphOps > 0 ? buf->timer.timeGraph(1, graphOps, [&] { buf->copy(); }).front()
                          : buf->timer
                                .time(
                                    1, [&] { buf->copy(); }, false)
                                .front();
    };
    return CeilingRunner{time, 2.0 * static_cast<double>(buf->bytes)};
  };
  return s;
}

}  // namespace

std::vector<CeilingSpec> cudaGemmCeilingSpecs(Precision p, int device) {
  std::vector<CeilingSpec> out;
  for (std::int64_t n : {4096, 8192}) {
    const KernelShape shape{fmt::format("square {}", n), {{"M", n}, {"N", n}, {"K", n}}};
    CeilingSpec s;
    s.cudaDevice = device;
    s.source = fmt::format("cuBLASLt gemm {} {}", shape.name, precisionName(p));
    s.make = [shape, p, device] {
      CUDA_CHECK(cudaSetDevice(device));
      std::shared_ptr<KernelCase> kc = kernel_ops::gemm().makeCuda(shape, KernelSettings{p});
      auto timer = std::make_shared<cuda::DeviceTimer>(static_cast<cudaStream_t>(kc->deviceStream()));
      return CeilingRunner{[kc, timer] {
                             return timer
                                 ->time(
                                     1, [&] { kc->run(); }, true)
                                 .front();
                           },
                           kc->flops()};
    };
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<CeilingSpec> cudaMemoryCeilingSpecs(int device) {
  int l2 = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  std::vector<CeilingSpec> out;
  // The graph's length matches the replays that time short kernels (timeCase: 20 a graph).
  if (l2 > 0) out.push_back(deviceCopySpec(MemoryLevel::kL2, l2 / 2.0, l2, device, 20));
  out.push_back(deviceCopySpec(MemoryLevel::kDram, 2.0 * (1 << 30), std::numeric_limits<double>::infinity(), device, 0));
  return out;
}

#else

std::vector<CeilingSpec> cudaGemmCeilingSpecs(Precision, int) { return {}; }
std::vector<CeilingSpec> cudaMemoryCeilingSpecs(int) { return {}; }

#endif

}  // namespace ts
