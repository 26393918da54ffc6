#include "bench/links/links_gpu.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "base/error.h"
#include "base/heartbeat.h"
#include "base/units.h"
#include "bench/session/activity.h"
#include "bench/session/inventory.h"
#include "bench/links/link_record.h"
#include "bench/links/links_options.h"
#include "bench/links/numa_memory.h"
#include "bench/session/run_session.h"
#include "bench/session/stats.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/copy_kernels.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/stream_gate.h"
#endif

namespace ts {

#ifdef TRAINSCOPE_HAVE_CUDA
namespace {

constexpr unsigned char kPattern = 0x5a;

struct Gpu {
  int index = 0;
  std::string name;
  int major = 0, minor = 0, sms = 0;
  std::optional<double> pcie;  // per direction, GB/s
  cudaStream_t stream = nullptr;
  std::unique_ptr<cuda::StreamGate> gate;
  void* a = nullptr;  // copy source, filled with kPattern
  void* b = nullptr;  // copy destination
};

// The streams of one timed test: each is gated, then `launch` queues one iteration on all of them; the
// time of an iteration is the slowest stream's, from events between iterations.
std::vector<double> timeIterations(std::vector<Gpu*> gpus, int warmup, int iters, int opsPerIter, const std::function<void()>& launch) {
  for (int i = 0; i < warmup; ++i) launch();
  for (Gpu* g : gpus) {
    CUDA_CHECK(cudaSetDevice(g->index));
    CUDA_CHECK(cudaStreamSynchronize(g->stream));
  }
  std::vector<std::vector<cudaEvent_t>> ev(gpus.size(), std::vector<cudaEvent_t>(static_cast<std::size_t>(iters) + 1));
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    CUDA_CHECK(cudaSetDevice(gpus[k]->index));
    for (auto& e : ev[k]) CUDA_CHECK(cudaEventCreate(&e));
    gpus[k]->gate->close(gpus[k]->stream);
    CUDA_CHECK(cudaEventRecord(ev[k][0], gpus[k]->stream));
  }
  for (int i = 0; i < iters; ++i) {
    launch();
    for (std::size_t k = 0; k < gpus.size(); ++k) {
      CUDA_CHECK(cudaSetDevice(gpus[k]->index));
      CUDA_CHECK(cudaEventRecord(ev[k][i + 1], gpus[k]->stream));
    }
  }
  for (Gpu* g : gpus) g->gate->open();
  std::vector<double> us(static_cast<std::size_t>(iters), 0.0);
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    CUDA_CHECK(cudaSetDevice(gpus[k]->index));
    CUDA_CHECK(cudaStreamSynchronize(gpus[k]->stream));
    heartbeat::beat();
    for (int i = 0; i < iters; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, ev[k][i], ev[k][i + 1]));
      us[i] = std::max(us[i], 1000.0 * ms / opsPerIter);
    }
    for (auto e : ev[k]) cudaEventDestroy(e);
  }
  return us;
}

// Counts the bytes of `devicePtr` (on gpu) that do not hold the pattern, and clears it for the next test.
long long checkPattern(Gpu& g, void* devicePtr, std::size_t bytes, std::vector<unsigned char>& host) {
  CUDA_CHECK(cudaSetDevice(g.index));
  CUDA_CHECK(cudaMemcpy(host.data(), devicePtr, bytes, cudaMemcpyDeviceToHost));
  long long wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += host[i] != kPattern;
  CUDA_CHECK(cudaMemset(devicePtr, 0, bytes));
  return wrong;
}

// A host<->device measurement of `test` ("h2d", "d2h_latency", ...) on one GPU, by the copy engine.
LinkMeasurement hostDevice(const std::string& test, bool toDevice, int gpu, std::uint64_t bytes) {
  LinkMeasurement m;
  m.test = test;
  m.src = toDevice ? "host" : fmt::format("cuda:{}", gpu);
  m.dst = toDevice ? fmt::format("cuda:{}", gpu) : "host";
  m.engine = "ce";
  m.direction = "uni";
  m.bytes = bytes;
  return m;
}

std::string cell(const std::optional<double>& v) { return v ? fmt::format("{:8.1f}", *v) : fmt::format("{:>8}", "N/A"); }

void printMatrix(const std::string& title, const std::vector<Gpu>& gpus, const std::map<std::pair<int, int>, double>& m) {
  std::printf("#\n# %s (GB/s; row = source, column = destination)\n#      ", title.c_str());
  for (const auto& g : gpus) std::printf("%8s", fmt::format("GPU{}", g.index).c_str());
  std::printf("\n");
  for (const auto& s : gpus) {
    std::printf("  %-5s", fmt::format("GPU{}", s.index).c_str());
    for (const auto& d : gpus) {
      auto it = m.find({s.index, d.index});
      std::printf("%s", cell(it == m.end() ? std::nullopt : std::optional<double>(it->second)).c_str());
    }
    std::printf("\n");
  }
}

}  // namespace

void validateGpuSelection(const LinksOptions& o) {
  if (o.gpus.empty()) return;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  for (int want : o.gpus)
    if (want < 0 || want >= count)
      throw UsageError(fmt::format("--gpus: GPU {} does not exist on {} ({} usable CUDA GPU(s))", want, hostName(), count));
}

std::size_t runGpuLinks(const LinksOptions& o, RunContext& ctx, const std::function<void(const LinkMeasurement&)>& emit) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    if (ctx.boot.rank() == 0) std::printf("#\n# GPU links: skipped (no CUDA GPU here)\n");
    return 0;
  }
  ctx.boot.barrier();
  if (ctx.boot.localRank() != 0) {  // one process per host tests the host's GPUs; the others wait quietly
    ctx.boot.quietBarrier();
    return 0;
  }
  const std::string host = hostName();
  nlohmann::json inventory;
  for (const auto& h : (*ctx.metadata)["hosts"])
    if (h["hostname"] == host) inventory = h;
  const auto& matrix = inventory.contains("gpus") && inventory["gpus"]["links"].contains("matrix") ? inventory["gpus"]["links"]["matrix"] : nlohmann::json();

  std::vector<Gpu> gpus(static_cast<std::size_t>(count));
  const std::size_t bytes = o.copyBytes;
  std::vector<unsigned char> host_(bytes);
  std::size_t failed = 0;
  for (int d = 0; d < count; ++d) {
    Gpu& g = gpus[d];
    g.index = d;
    cudaDeviceProp p{};
    CUDA_CHECK(cudaGetDeviceProperties(&p, d));
    g.name = p.name;
    g.major = p.major;
    g.minor = p.minor;
    g.sms = p.multiProcessorCount;
    if (inventory.contains("gpus") && d < static_cast<int>(inventory["gpus"]["devices"].size())) {
      const auto& dev = inventory["gpus"]["devices"][d];
      if (!dev["pcie_generation"].is_null()) g.pcie = pcieGbps(dev["pcie_generation"].get<int>(), dev["pcie_width"].get<int>());
    }
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
    g.gate = std::make_unique<cuda::StreamGate>();
    ErrorContext ectx(fmt::format("allocating 2 x {} on cuda:{} for --copy-bytes", formatBytes(bytes), d));
    CUDA_CHECK(cudaMalloc(&g.a, bytes));
    CUDA_CHECK(cudaMalloc(&g.b, bytes));
    CUDA_CHECK(cudaMemset(g.a, kPattern, bytes));
    CUDA_CHECK(cudaMemset(g.b, 0, bytes));
  }
  auto measure = [&](LinkMeasurement m) {
    failed += m.wrong != 0;
    emit(m);
    return bandwidthOf(m);
  };
  std::printf("#\n# GPU links on %s: %d GPU(s), copies of %s, %d iterations\n", host.c_str(), count, formatBytes(bytes).c_str(), o.iters);

  // Host <-> device, pinned and pageable host memory, placed on the GPU's NUMA node where it can be.
  std::printf("# %-8s %5s %12s %12s %12s %12s %10s\n", "GPU", "NUMA", "h2d pinned", "d2h pinned", "h2d pageable", "d2h pageable", "peak");
  for (auto& g : gpus) {
    if (!o.gpus.empty() && std::find(o.gpus.begin(), o.gpus.end(), g.index) == o.gpus.end()) continue;
    char bus[32] = {};
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), g.index));
    const int node = numaNodeOfPciDevice(bus);
    NumaHostBuffer pinnedBuf(bytes, node), pageableBuf(bytes, node);
    CUDA_CHECK(cudaHostRegister(pinnedBuf.data(), bytes, cudaHostRegisterPortable));
    std::memset(pinnedBuf.data(), kPattern, bytes);
    std::memset(pageableBuf.data(), kPattern, bytes);
    const bool c2c = g.name.find("GH200") != std::string::npos || g.name.find("GB200") != std::string::npos;
    const LinkClass link = c2c ? LinkClass{"c2c", "NVLink-C2C", 450.0} : LinkClass{"pcie", "host <-> GPU", g.pcie};
    double row[4] = {0, 0, 0, 0};
    int k = 0;
    for (const bool isPinned : {true, false}) {
      void* hostBuf = isPinned ? pinnedBuf.data() : pageableBuf.data();
      for (const bool toDevice : {true, false}) {
        activity::set(fmt::format("{} {} copy of {} on cuda:{}", toDevice ? "h2d" : "d2h", isPinned ? "pinned" : "pageable", formatBytes(bytes), g.index));
        CUDA_CHECK(cudaSetDevice(g.index));
        LinkMeasurement m = hostDevice(toDevice ? "h2d" : "d2h", toDevice, g.index, bytes);
        m.link = link;
        m.extra = {{"host", host}, {"memory", isPinned ? "pinned" : "pageable"},
                   {"numa_node", pinnedBuf.boundNode() >= 0 ? nlohmann::json(pinnedBuf.boundNode()) : nlohmann::json(nullptr)}};
        m.samplesUs = timeIterations({&g}, o.warmup, o.iters, 1, [&] {
          CUDA_CHECK(cudaSetDevice(g.index));
          if (toDevice) CUDA_CHECK(cudaMemcpyAsync(g.b, hostBuf, bytes, cudaMemcpyHostToDevice, g.stream));
          else CUDA_CHECK(cudaMemcpyAsync(hostBuf, g.a, bytes, cudaMemcpyDeviceToHost, g.stream));
        });
        if (toDevice) {
          m.wrong = checkPattern(g, g.b, bytes, host_);
        } else {
          const auto* h = static_cast<const unsigned char*>(hostBuf);
          for (std::size_t i = 0; i < bytes; ++i) m.wrong += h[i] != kPattern;
        }
        row[k++] = measure(m).value_or(0);
      }
    }
    CUDA_CHECK(cudaHostUnregister(pinnedBuf.data()));
    std::printf("  GPU%-5d %5s %12.1f %12.1f %12.1f %12.1f %10s\n", g.index, node >= 0 ? std::to_string(node).c_str() : "-", row[0], row[1],
                row[2], row[3], link.peakGbps ? fmt::format("{:.1f}", *link.peakGbps).c_str() : "?");
  }

  // Device-local copies (diagonal) and every pair, copy engine and SM, P2P on and off, one way and both.
  std::map<std::pair<int, int>, double> ceUni, ceBi, smUni, ceNoP2p;
  auto selected = [&](const Gpu& g) { return o.gpus.empty() || std::find(o.gpus.begin(), o.gpus.end(), g.index) != o.gpus.end(); };
  for (auto& s : gpus) {
    for (auto& d : gpus) {
      if (!selected(s) || !selected(d)) continue;
      const bool local = s.index == d.index;
      int access = local ? 1 : 0;
      if (!local) CUDA_CHECK(cudaDeviceCanAccessPeer(&access, s.index, d.index));
      const std::string cellText = !local && matrix.is_array() ? matrix[s.index][d.index].get<std::string>() : "";
      const LinkClass link = local ? LinkClass{"hbm", "device memory (a copy reads and writes it)", deviceMemoryGbps(s.name)}
                                   : gpuPairLink(cellText, s.major, s.minor, s.pcie);
      auto peer = [&](bool enable) {
        if (local) return;
        for (auto [x, y] : {std::pair{s.index, d.index}, std::pair{d.index, s.index}}) {
          CUDA_CHECK(cudaSetDevice(x));
          const cudaError_t rc = enable ? cudaDeviceEnablePeerAccess(y, 0) : cudaDeviceDisablePeerAccess(y);
          if (rc != cudaSuccess && rc != cudaErrorPeerAccessAlreadyEnabled && rc != cudaErrorPeerAccessNotEnabled) CUDA_CHECK(rc);
          cudaGetLastError();
        }
      };
      struct Variant { const char* engine; bool bi; bool p2p; std::map<std::pair<int, int>, double>* out; };
      for (const Variant v : {Variant{"ce", false, true, &ceUni}, Variant{"ce", true, true, &ceBi}, Variant{"sm", false, true, &smUni},
                              Variant{"ce", false, false, &ceNoP2p}}) {
        if (local && (v.bi || !v.p2p)) continue;
        if (!local && v.p2p && !access) continue;  // N/A: this pair has no peer access
        if (!local && v.bi && s.index > d.index) continue;  // both directions at once: once per pair
        peer(v.p2p);
        activity::set(fmt::format("{} {} copy cuda:{} -> cuda:{}{}", v.engine, v.bi ? "bidirectional" : "", s.index, d.index, v.p2p ? "" : " (P2P off)"));
        LinkMeasurement m;
        m.test = local ? "d2d_local" : "d2d_peer";
        m.src = fmt::format("cuda:{}", s.index);
        m.dst = fmt::format("cuda:{}", d.index);
        m.engine = v.engine;
        m.direction = v.bi ? "bi" : "uni";
        m.bytes = bytes * (v.bi ? 2 : 1);
        m.link = link;
        m.extra = {{"host", host}, {"p2p", local ? nlohmann::json(nullptr) : nlohmann::json(v.p2p)}};
        std::vector<Gpu*> streams = {&s};
        if (v.bi) streams.push_back(&d);
        m.samplesUs = timeIterations(streams, o.warmup, o.iters, 1, [&] {
          CUDA_CHECK(cudaSetDevice(s.index));
          if (std::string(v.engine) == "sm") cuda::smCopy(d.b, s.a, bytes, s.sms, s.stream);
          else CUDA_CHECK(cudaMemcpyPeerAsync(d.b, d.index, s.a, s.index, bytes, s.stream));
          if (v.bi) {
            CUDA_CHECK(cudaSetDevice(d.index));
            CUDA_CHECK(cudaMemcpyPeerAsync(s.b, s.index, d.a, d.index, bytes, d.stream));
          }
        });
        m.wrong = checkPattern(d, d.b, bytes, host_) + (v.bi ? checkPattern(s, s.b, bytes, host_) : 0);
        const auto bw = measure(m);
        if (bw) (*v.out)[{s.index, d.index}] = *bw;
      }
    }
  }
  printMatrix("copy engine, one direction (P2P on; diagonal: device-local copy)", gpus, ceUni);
  if (count > 1) {
    printMatrix("copy engine, both directions at once", gpus, ceBi);
    printMatrix("copy engine, P2P off (staged through the host)", gpus, ceNoP2p);
  }
  printMatrix("SM copy kernel, one direction", gpus, smUni);

  // Latency: 4-byte copies (launch to completion, the way a small transfer feels) and a pointer chase.
  constexpr int kSmall = 100;
  for (auto& g : gpus) {
    if (!selected(g)) continue;
    CUDA_CHECK(cudaSetDevice(g.index));
    void* tiny = nullptr;
    CUDA_CHECK(cudaHostAlloc(&tiny, 64, cudaHostAllocPortable));
    std::memset(tiny, kPattern, 64);
    for (const bool toDevice : {true, false}) {
      LinkMeasurement m = hostDevice(toDevice ? "h2d_latency" : "d2h_latency", toDevice, g.index, 4);
      m.latency = true;
      m.link = {"pcie", "host <-> GPU", g.pcie};
      m.extra = {{"host", host}, {"memory", "pinned"}};
      m.samplesUs = timeIterations({&g}, o.warmup, o.iters, kSmall, [&] {
        for (int i = 0; i < kSmall; ++i) {
          if (toDevice) CUDA_CHECK(cudaMemcpyAsync(g.b, tiny, 4, cudaMemcpyHostToDevice, g.stream));
          else CUDA_CHECK(cudaMemcpyAsync(tiny, g.a, 4, cudaMemcpyDeviceToHost, g.stream));
        }
      });
      m.wrong = 0;
      for (int i = 0; i < 4; ++i) m.wrong += static_cast<unsigned char*>(tiny)[i] != kPattern;
      if (toDevice) {
        unsigned char back[4];
        CUDA_CHECK(cudaMemcpy(back, g.b, 4, cudaMemcpyDeviceToHost));
        for (auto c : back) m.wrong += c != kPattern;
      }
      measure(m);
    }
    CUDA_CHECK(cudaFreeHost(tiny));
    // Pointer chase over 64 MiB of device memory in a random cycle (defeats caches and prefetch).
    constexpr std::uint32_t kElems = (64u << 20) / 64;  // one element per 64-byte line
    std::vector<std::uint32_t> order(kElems);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin() + 1, order.end(), std::mt19937(7));
    std::vector<std::uint32_t> chain(static_cast<std::size_t>(kElems) * 16, 0);
    for (std::uint32_t i = 0; i < kElems; ++i) chain[static_cast<std::size_t>(order[i]) * 16] = order[(i + 1) % kElems] * 16;
    std::uint32_t* dChain = nullptr;
    std::uint32_t* dOut = nullptr;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dChain), chain.size() * sizeof(std::uint32_t)));
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dOut), sizeof(std::uint32_t)));
    CUDA_CHECK(cudaMemcpy(dChain, chain.data(), chain.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
    constexpr std::uint64_t kSteps = 100000;
    LinkMeasurement m;
    m.test = "device_load_latency";
    m.src = m.dst = fmt::format("cuda:{}", g.index);
    m.engine = "sm";
    m.direction = "uni";
    m.bytes = 4;
    m.latency = true;
    m.link = {"hbm", "dependent loads from device memory (random, 64 MiB)", std::nullopt};
    m.extra = {{"host", host}, {"steps", kSteps}};
    const auto us = timeIterations({&g}, 1, std::max(3, o.iters / 4), 1, [&] { cuda::pointerChase(dChain, kSteps, dOut, g.stream); });
    for (double t : us) m.samplesUs.push_back(t / static_cast<double>(kSteps));
    // The chain is a cycle: after kSteps loads from 0 it is at a known element.
    std::uint32_t got = 0, want = 0;
    for (std::uint64_t s = 0; s < kSteps; ++s) want = chain[want];
    CUDA_CHECK(cudaMemcpy(&got, dOut, sizeof(got), cudaMemcpyDeviceToHost));
    m.wrong = got != want;
    measure(m);
    std::printf("# GPU%d latency: pointer chase %.3f us per load\n", g.index, summarize(m.samplesUs).median);
    cudaFree(dChain);
    cudaFree(dOut);
  }
  for (auto& g : gpus) {
    cudaSetDevice(g.index);
    cudaFree(g.a);
    cudaFree(g.b);
    g.gate.reset();
    cudaStreamDestroy(g.stream);
  }
  std::fflush(stdout);
  ctx.boot.quietBarrier();
  return failed;
}

#else

void validateGpuSelection(const LinksOptions& o) {
  if (!o.gpus.empty()) throw UsageError("--gpus: this trainscope was built without CUDA");
}

std::size_t runGpuLinks(const LinksOptions&, RunContext& ctx, const std::function<void(const LinkMeasurement&)>&) {
  if (ctx.boot.rank() == 0) std::printf("#\n# GPU links: skipped (built without CUDA)\n");
  return 0;
}

#endif

}  // namespace ts
