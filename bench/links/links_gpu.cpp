#include "bench/links/links_gpu.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "base/error.h"
#include "base/heartbeat.h"
#include "base/terminal_text.h"
#include "base/units.h"
#include "bench/failures/activity.h"
#include "bench/inventory/inventory.h"
#include "bench/links/link_record.h"
#include "bench/links/links_options.h"
#include "bench/links/numa_memory.h"
#include "bench/links/pointer_chase.h"
#include "bench/results/stats.h"
#include "bench/run/run_session.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_count.h"
#include "kernels/cuda/device_resources.h"
#include "kernels/cuda/memory_stream.h"
#include "kernels/cuda/stream_gate.h"
#endif

namespace ts {

#ifdef TRAINSCOPE_HAVE_CUDA
namespace {

constexpr unsigned char kPattern = 0x5a;

// One GPU under test, and everything of it on that GPU: its stream and gate, and the two copy buffers.
struct Gpu {
  Gpu(int d, std::optional<double> pcieGbps, std::size_t bytes);
  cuda::SelectDevice select;  // first: what follows is made on GPU d
  int index;
  std::string name;
  int major = 0, minor = 0, sms = 0;
  std::optional<double> pcie;  // per direction, GB/s
  cuda::Stream stream;
  cuda::StreamGate gate;
  cuda::DeviceBuffer a;  // copy source, filled with kPattern
  cuda::DeviceBuffer b;  // copy destination, zeroed after each check
};

Gpu::Gpu(int d, std::optional<double> pcieGbps, std::size_t bytes) : select(d), index(d), pcie(pcieGbps) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, d));
  name = p.name;
  major = p.major;
  minor = p.minor;
  sms = p.multiProcessorCount;
  ErrorContext ectx(fmt::format("allocating 2 x {} on cuda:{} for --copy-bytes", formatBytes(bytes), d));
  a = cuda::DeviceBuffer(bytes);
  b = cuda::DeviceBuffer(bytes);
  // On the GPU's own stream and waited for: the legacy stream (a plain cudaMemset) is not ordered against
  // the non-blocking stream the copies run on, and cudaMemset of device memory may return before it ran.
  CUDA_CHECK(cudaMemsetAsync(a.get(), kPattern, bytes, stream.get()));
  CUDA_CHECK(cudaMemsetAsync(b.get(), 0, bytes, stream.get()));
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
}

// A copy on g's stream, waited for (the legacy stream is not ordered against g's: see Gpu::Gpu).
void copyOnStream(Gpu& g, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  CUDA_CHECK(cudaSetDevice(g.index));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, g.stream.get()));
  CUDA_CHECK(cudaStreamSynchronize(g.stream.get()));
}

// The streams of one timed test: each is gated, then `launch` queues one iteration on all of them; the
// time of an iteration is the slowest stream's, from events between iterations.
std::vector<double> timeIterations(const std::vector<Gpu*>& gpus, int warmup, int iters, int opsPerIter,
                                   const std::function<void()>& launch) {
  for (int i = 0; i < warmup; ++i) launch();
  for (Gpu* g : gpus) {
    CUDA_CHECK(cudaSetDevice(g->index));
    CUDA_CHECK(cudaStreamSynchronize(g->stream.get()));
  }
  std::vector<std::vector<cuda::Event>> ev;
  for (Gpu* g : gpus) {
    CUDA_CHECK(cudaSetDevice(g->index));
    ev.push_back(cuda::makeEvents(static_cast<std::size_t>(iters) + 1));
    g->gate.close(g->stream.get());
    ev.back()[0].record(g->stream.get());
  }
  for (int i = 0; i < iters; ++i) {
    launch();
    for (std::size_t k = 0; k < gpus.size(); ++k) {
      CUDA_CHECK(cudaSetDevice(gpus[k]->index));
      ev[k][i + 1].record(gpus[k]->stream.get());
    }
  }
  for (Gpu* g : gpus) g->gate.open();
  std::vector<double> us(static_cast<std::size_t>(iters), 0.0);
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    CUDA_CHECK(cudaSetDevice(gpus[k]->index));
    CUDA_CHECK(cudaStreamSynchronize(gpus[k]->stream.get()));
    gpus[k]->gate.checkOpenedInTime(fmt::format("timing {} iteration(s) on cuda:{}", iters, gpus[k]->index));
    heartbeat::beat();
    for (int i = 0; i < iters; ++i) us[i] = std::max(us[i], 1000.0 * cuda::elapsedMs(ev[k][i], ev[k][i + 1]) / opsPerIter);
  }
  return us;
}

// One copy at a time by the host clock, from its call until its stream has finished it: for copies from or
// to pageable host memory, which the driver stages through a pinned buffer of its own with the host taking
// part (a device-to-host one returns only once the data is in the host buffer). Behind a closed gate such a
// copy would block the host until the gate gave up, so they are not gated; what each sample holds is what a
// program's pageable copy costs it, launch included.
std::vector<double> timeSynchronousCopies(Gpu& g, int warmup, int iters, const std::function<void()>& copy) {
  CUDA_CHECK(cudaSetDevice(g.index));
  std::vector<double> us;
  for (int i = -warmup; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    CUDA_CHECK(cudaStreamSynchronize(g.stream.get()));
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    heartbeat::beat();
  }
  return us;
}

// Counts the bytes of `devicePtr` (on gpu) that do not hold the pattern, and clears it for the next test.
long long checkPattern(Gpu& g, void* devicePtr, std::size_t bytes, std::vector<unsigned char>& host) {
  copyOnStream(g, host.data(), devicePtr, bytes, cudaMemcpyDeviceToHost);
  long long wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += host[i] != kPattern;
  CUDA_CHECK(cudaMemsetAsync(devicePtr, 0, bytes, g.stream.get()));  // ordered before the next test's copies
  CUDA_CHECK(cudaStreamSynchronize(g.stream.get()));
  return wrong;
}

long long countNotPattern(const void* p, std::size_t bytes) {
  const auto* c = static_cast<const unsigned char*>(p);
  return std::count_if(c, c + bytes, [](unsigned char x) { return x != kPattern; });
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

// Peer access from x to y and from y to x, on or off; "already so" is not an error.
void setPeerAccess(int x, int y, bool enable) {
  for (auto [from, to] : {std::pair{x, y}, std::pair{y, x}}) {
    CUDA_CHECK(cudaSetDevice(from));
    const cudaError_t rc = enable ? cudaDeviceEnablePeerAccess(to, 0) : cudaDeviceDisablePeerAccess(to);
    if (rc != cudaSuccess && rc != cudaErrorPeerAccessAlreadyEnabled && rc != cudaErrorPeerAccessNotEnabled) CUDA_CHECK(rc);
    cudaGetLastError();
  }
}

std::string cell(const std::optional<double>& v) { return v ? fmt::format("{:8.1f}", *v) : fmt::format("{:>8}", "N/A"); }

using Matrix = std::map<std::pair<int, int>, double>;  // (source, destination) -> GB/s

void printMatrix(const std::string& title, const std::deque<Gpu>& gpus, const Matrix& m) {
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

enum class Engine { kCopyEngine, kSm };
const char* engineName(Engine e) { return e == Engine::kSm ? "sm" : "ce"; }

// The copies between two GPUs (or within one): which engine, one direction or both at once, P2P on or off.
struct PairVariant {
  Engine engine;
  bool bi;
  bool p2p;
};
enum PairTest { kCeUni, kCeBi, kSmUni, kCeNoP2p, kPairTests };  // the order they run in
constexpr PairVariant kPairVariants[kPairTests] = {{Engine::kCopyEngine, false, true},
                                                   {Engine::kCopyEngine, true, true},
                                                   {Engine::kSm, false, true},
                                                   {Engine::kCopyEngine, false, false}};

// The GPU tests of one host, run by its first process: host <-> device, then device-local and pair copies,
// then latencies. Each measurement is emitted as it is made; failed() counts the failed payload checks.
class GpuLinks {
 public:
  GpuLinks(const LinksOptions& o, RunContext& ctx, const std::function<void(const LinkMeasurement&)>& emit, int count);
  void hostDeviceTests();
  void pairTests();
  void latencyTests();
  std::size_t failed() const { return failed_; }

 private:
  bool selected(const Gpu& g) const {
    return o_.gpus.empty() || std::find(o_.gpus.begin(), o_.gpus.end(), g.index) != o_.gpus.end();
  }
  std::optional<double> measure(const LinkMeasurement& m) {
    failed_ += m.wrong != 0;
    emit_(m);
    return bandwidthOf(m);
  }
  void hostDeviceRow(Gpu& g);
  std::optional<double> hostDeviceCopy(Gpu& g, void* hostBuf, bool isPinned, bool toDevice, const LinkClass& link, int numaNode);
  void pair(Gpu& s, Gpu& d);
  LinkMeasurement pairCopy(Gpu& s, Gpu& d, const PairVariant& v, const LinkClass& link);
  void smallCopyLatency(Gpu& g);
  void pointerChaseLatency(Gpu& g);

  const LinksOptions& o_;
  const std::function<void(const LinkMeasurement&)>& emit_;
  const std::string host_;
  const std::size_t bytes_;
  nlohmann::json matrix_;                // the inventory's link matrix of this host, or null
  std::deque<Gpu> gpus_;                 // not movable (gates), so not a vector
  std::vector<unsigned char> checkBuf_;  // the host copy of a device buffer being checked
  Matrix pairs_[kPairTests];
  std::size_t failed_ = 0;
};

GpuLinks::GpuLinks(const LinksOptions& o, RunContext& ctx, const std::function<void(const LinkMeasurement&)>& emit, int count)
    : o_(o), emit_(emit), host_(hostName()), bytes_(o.copyBytes), checkBuf_(o.copyBytes) {
  nlohmann::json inventory;
  for (const auto& h : (*ctx.metadata)["hosts"])
    if (h["hostname"] == host_) inventory = h;
  if (inventory.contains("gpus") && inventory["gpus"]["links"].contains("matrix")) matrix_ = inventory["gpus"]["links"]["matrix"];
  for (int d = 0; d < count; ++d) {
    std::optional<double> pcie;
    if (inventory.contains("gpus") && d < static_cast<int>(inventory["gpus"]["devices"].size())) {
      const auto& dev = inventory["gpus"]["devices"][d];
      if (!dev["pcie_generation"].is_null()) pcie = pcieGbps(dev["pcie_generation"].get<int>(), dev["pcie_width"].get<int>());
    }
    gpus_.emplace_back(d, pcie, bytes_);
  }
  std::printf("#\n# GPU links on %s: %d GPU(s), copies of %s, %d iterations\n", printable(host_).c_str(), count,
              formatBytes(bytes_).c_str(), o.iters);
}

// Host <-> device, pinned and pageable host memory, placed on the GPU's NUMA node where it can be.
void GpuLinks::hostDeviceTests() {
  std::printf("# %-8s %5s %12s %12s %12s %12s %10s\n", "GPU", "NUMA", "h2d pinned", "d2h pinned", "h2d pageable", "d2h pageable",
              "peak");
  for (Gpu& g : gpus_)
    if (selected(g)) hostDeviceRow(g);
}

void GpuLinks::hostDeviceRow(Gpu& g) {
  char bus[32] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), g.index));
  const int node = numaNodeOfPciDevice(bus);
  NumaHostBuffer pinnedBuf(bytes_, node), pageableBuf(bytes_, node);
  const cuda::HostRegistration pinned(pinnedBuf.data(), bytes_, cudaHostRegisterPortable);
  std::memset(pinnedBuf.data(), kPattern, bytes_);
  std::memset(pageableBuf.data(), kPattern, bytes_);
  const bool c2c = g.name.find("GH200") != std::string::npos || g.name.find("GB200") != std::string::npos;
  const LinkClass link = c2c ? LinkClass{"c2c", "NVLink-C2C", 450.0} : LinkClass{"pcie", "host <-> GPU", g.pcie};
  double row[4] = {0, 0, 0, 0};
  int k = 0;
  for (const bool isPinned : {true, false})
    for (const bool toDevice : {true, false})
      row[k++] =
          hostDeviceCopy(g, isPinned ? pinnedBuf.data() : pageableBuf.data(), isPinned, toDevice, link, pinnedBuf.boundNode())
              .value_or(0);
  std::printf("  GPU%-5d %5s %12.1f %12.1f %12.1f %12.1f %10s\n", g.index, node >= 0 ? std::to_string(node).c_str() : "-", row[0],
              row[1], row[2], row[3], link.peakGbps ? fmt::format("{:.1f}", *link.peakGbps).c_str() : "?");
}

std::optional<double> GpuLinks::hostDeviceCopy(Gpu& g, void* hostBuf, bool isPinned, bool toDevice, const LinkClass& link,
                                               int numaNode) {
  activity::set(fmt::format("{} {} copy of {} on cuda:{}", toDevice ? "h2d" : "d2h", isPinned ? "pinned" : "pageable",
                            formatBytes(bytes_), g.index));
  CUDA_CHECK(cudaSetDevice(g.index));
  LinkMeasurement m = hostDevice(toDevice ? "h2d" : "d2h", toDevice, g.index, bytes_);
  m.link = link;
  m.extra = {{"host", host_},
             {"memory", isPinned ? "pinned" : "pageable"},
             {"numa_node", numaNode >= 0 ? nlohmann::json(numaNode) : nlohmann::json(nullptr)}};
  auto copy = [&] {
    CUDA_CHECK(cudaSetDevice(g.index));
    if (toDevice)
      CUDA_CHECK(cudaMemcpyAsync(g.b.get(), hostBuf, bytes_, cudaMemcpyHostToDevice, g.stream.get()));
    else
      CUDA_CHECK(cudaMemcpyAsync(hostBuf, g.a.get(), bytes_, cudaMemcpyDeviceToHost, g.stream.get()));
  };
  m.samplesUs =
      isPinned ? timeIterations({&g}, o_.warmup, o_.iters, 1, copy) : timeSynchronousCopies(g, o_.warmup, o_.iters, copy);
  m.wrong = toDevice ? checkPattern(g, g.b.get(), bytes_, checkBuf_) : countNotPattern(hostBuf, bytes_);
  return measure(m);
}

// Device-local copies (diagonal) and every pair, copy engine and SM, P2P on and off, one way and both.
void GpuLinks::pairTests() {
  for (Gpu& s : gpus_)
    for (Gpu& d : gpus_)
      if (selected(s) && selected(d)) pair(s, d);
  printMatrix("copy engine, one direction (P2P on; diagonal: device-local copy)", gpus_, pairs_[kCeUni]);
  if (gpus_.size() > 1) {
    printMatrix("copy engine, both directions at once", gpus_, pairs_[kCeBi]);
    printMatrix("copy engine, P2P off (staged through the host)", gpus_, pairs_[kCeNoP2p]);
  }
  printMatrix("SM copy kernel, one direction", gpus_, pairs_[kSmUni]);
}

void GpuLinks::pair(Gpu& s, Gpu& d) {
  const bool local = s.index == d.index;
  int access = local ? 1 : 0;
  if (!local) CUDA_CHECK(cudaDeviceCanAccessPeer(&access, s.index, d.index));
  const nlohmann::json& matrix = matrix_;  // const access, as before: reading a cell never grows the matrix
  const std::string cellText = !local && matrix.is_array() ? matrix[s.index][d.index].get<std::string>() : "";
  const LinkClass link = local ? LinkClass{"hbm", "device memory (a copy reads and writes it)", deviceMemoryGbps(s.name)}
                               : gpuPairLink(cellText, s.major, s.minor, s.pcie);
  for (int t = 0; t < kPairTests; ++t) {
    const PairVariant& v = kPairVariants[t];
    if (local && (v.bi || !v.p2p)) continue;
    if (!local && v.p2p && !access) continue;           // N/A: this pair has no peer access
    if (!local && v.bi && s.index > d.index) continue;  // both directions at once: once per pair
    if (!local) setPeerAccess(s.index, d.index, v.p2p);
    const auto bw = measure(pairCopy(s, d, v, link));
    if (bw) pairs_[t][{s.index, d.index}] = *bw;
  }
}

LinkMeasurement GpuLinks::pairCopy(Gpu& s, Gpu& d, const PairVariant& v, const LinkClass& link) {
  const bool local = s.index == d.index;
  activity::set(fmt::format("{} {} copy cuda:{} -> cuda:{}{}", engineName(v.engine), v.bi ? "bidirectional" : "", s.index,
                            d.index, v.p2p ? "" : " (P2P off)"));
  LinkMeasurement m;
  m.test = local ? "d2d_local" : "d2d_peer";
  m.src = fmt::format("cuda:{}", s.index);
  m.dst = fmt::format("cuda:{}", d.index);
  m.engine = engineName(v.engine);
  m.direction = v.bi ? "bi" : "uni";
  m.bytes = bytes_ * (v.bi ? 2 : 1);
  m.link = link;
  m.extra = {{"host", host_}, {"p2p", local ? nlohmann::json(nullptr) : nlohmann::json(v.p2p)}};
  std::vector<Gpu*> streams = {&s};
  if (v.bi) streams.push_back(&d);
  m.samplesUs = timeIterations(streams, o_.warmup, o_.iters, 1, [&] {
    CUDA_CHECK(cudaSetDevice(s.index));
    if (v.engine == Engine::kSm)
      cuda::smCopy(d.b.get(), s.a.get(), bytes_, s.sms, s.stream.get());
    else
      CUDA_CHECK(cudaMemcpyPeerAsync(d.b.get(), d.index, s.a.get(), s.index, bytes_, s.stream.get()));
    if (v.bi) {
      CUDA_CHECK(cudaSetDevice(d.index));
      CUDA_CHECK(cudaMemcpyPeerAsync(s.b.get(), s.index, d.a.get(), d.index, bytes_, d.stream.get()));
    }
  });
  m.wrong = checkPattern(d, d.b.get(), bytes_, checkBuf_) + (v.bi ? checkPattern(s, s.b.get(), bytes_, checkBuf_) : 0);
  return m;
}

// Latency: 4-byte copies (launch to completion, the way a small transfer feels) and a pointer chase.
void GpuLinks::latencyTests() {
  for (Gpu& g : gpus_) {
    if (!selected(g)) continue;
    smallCopyLatency(g);
    pointerChaseLatency(g);
  }
}

void GpuLinks::smallCopyLatency(Gpu& g) {
  constexpr int kSmall = 100;
  CUDA_CHECK(cudaSetDevice(g.index));
  const cuda::PinnedHostBuffer tiny(64, cudaHostAllocPortable);
  std::memset(tiny.get(), kPattern, 64);
  for (const bool toDevice : {true, false}) {
    LinkMeasurement m = hostDevice(toDevice ? "h2d_latency" : "d2h_latency", toDevice, g.index, 4);
    m.latency = true;
    m.link = {"pcie", "host <-> GPU", g.pcie};
    m.extra = {{"host", host_}, {"memory", "pinned"}};
    // One gate per sample: every sample's kSmall copies behind one gate would be thousands of commands, which
    // may fill the stream's queue (its depth is the driver's) and block the host until the gate gave up.
    for (int it = 0; it < o_.iters; ++it)
      m.samplesUs.push_back(timeIterations({&g}, it == 0 ? o_.warmup : 0, 1, kSmall, [&] {
                              for (int i = 0; i < kSmall; ++i) {
                                if (toDevice)
                                  CUDA_CHECK(cudaMemcpyAsync(g.b.get(), tiny.get(), 4, cudaMemcpyHostToDevice, g.stream.get()));
                                else
                                  CUDA_CHECK(cudaMemcpyAsync(tiny.get(), g.a.get(), 4, cudaMemcpyDeviceToHost, g.stream.get()));
                              }
                            }).front());
    m.wrong = countNotPattern(tiny.get(), 4);
    if (toDevice) {
      unsigned char back[4];
      copyOnStream(g, back, g.b.get(), 4, cudaMemcpyDeviceToHost);
      m.wrong += countNotPattern(back, 4);
    }
    measure(m);
  }
}

void GpuLinks::pointerChaseLatency(Gpu& g) {
  constexpr std::uint64_t kSteps = 100000;
  CUDA_CHECK(cudaSetDevice(g.index));
  int l2 = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, g.index));
  const std::size_t span = pointerChaseSpanBytes(static_cast<std::size_t>(std::max(l2, 0)));
  activity::set(fmt::format("pointer chase over {} on cuda:{}", formatBytes(span), g.index));
  const std::vector<std::uint32_t> chain = randomCycle(span);
  cuda::DeviceArray<std::uint32_t> dChain(chain.size()), dCursor(1);
  copyOnStream(g, dChain.get(), chain.data(), chain.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice);
  CUDA_CHECK(cudaMemsetAsync(dCursor.get(), 0, sizeof(std::uint32_t), g.stream.get()));  // the cycle starts at 0
  LinkMeasurement m;
  m.test = "device_load_latency";
  m.src = m.dst = fmt::format("cuda:{}", g.index);
  m.engine = engineName(Engine::kSm);
  m.direction = "uni";
  m.bytes = 4;
  m.latency = true;
  m.link = {"hbm",
            fmt::format("dependent loads from device memory (random over {}; L2 {})", formatBytes(span),
                        l2 > 0 ? formatBytes(static_cast<std::uint64_t>(l2)) : std::string("unknown")),
            std::nullopt};
  m.extra = {{"host", host_}, {"steps", kSteps}};
  // Each launch walks on from where the last stopped (the cursor), so no launch finds the lines of the one
  // before still in the L2.
  constexpr int kWarmup = 1;
  const int iters = std::max(3, o_.iters / 4);
  const auto us =
      timeIterations({&g}, kWarmup, iters, 1, [&] { cuda::pointerChase(dChain.get(), kSteps, dCursor.get(), g.stream.get()); });
  for (double t : us) m.samplesUs.push_back(t / static_cast<double>(kSteps));
  // The chain is a cycle: after every launch's steps from 0 it is at a known element.
  std::uint32_t got = 0, want = 0;
  for (std::uint64_t s = 0; s < static_cast<std::uint64_t>(kWarmup + iters) * kSteps; ++s) want = chain[want];
  copyOnStream(g, &got, dCursor.get(), sizeof(got), cudaMemcpyDeviceToHost);
  m.wrong = got != want;
  measure(m);
  std::printf("# GPU%d latency: pointer chase over %s, %.3f us per load\n", g.index, formatBytes(span).c_str(),
              summarize(m.samplesUs).median);
}

}  // namespace

void validateGpuSelection(const LinksOptions& o) {
  if (o.gpus.empty()) return;
  const int count = cuda::usableDeviceCount();
  for (int want : o.gpus)
    if (want < 0 || want >= count)
      throw UsageError(fmt::format("--gpus: GPU {} does not exist on {} ({} usable CUDA GPU(s))", want, hostName(), count));
}

std::size_t runGpuLinks(const LinksOptions& o, RunContext& ctx, const std::function<void(const LinkMeasurement&)>& emit) {
  const int count = cuda::usableDeviceCount();
  if (count == 0) {
    if (ctx.boot.rank() == 0) std::printf("#\n# GPU links: skipped (no CUDA GPU here)\n");
    return 0;
  }
  ctx.boot.barrier();
  if (ctx.boot.localRank() != 0) {  // one process per host tests the host's GPUs; the others wait quietly
    ctx.boot.quietBarrier();
    return 0;
  }
  std::size_t failed = 0;
  {
    GpuLinks links(o, ctx, emit, count);  // its buffers, streams and gates freed before the barrier
    links.hostDeviceTests();
    links.pairTests();
    links.latencyTests();
    failed = links.failed();
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
