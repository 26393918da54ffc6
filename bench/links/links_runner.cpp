// The driver of `trainscope links`: host memory on every host, MPI point-to-point between rank pairs, and
// the GPU tests (links_gpu.cpp). Records stream as each measurement finishes.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "base/error.h"
#include "base/heartbeat.h"
#include "base/json_text.h"
#include "base/terminal_text.h"
#include "base/units.h"
#include "bench/failures/activity.h"
#include "bench/failures/agreement.h"
#include "bench/failures/fault_injection.h"
#include "bench/failures/watchdog.h"
#include "bench/inventory/inventory.h"
#include "bench/links/link_outliers.h"
#include "bench/links/link_record.h"
#include "bench/links/link_suspects.h"
#include "bench/links/links_gpu.h"
#include "bench/links/links_options.h"
#include "bench/links/links_table.h"
#include "bench/results/result_writer.h"
#include "bench/results/stats.h"
#include "bench/run/run_session.h"
#include "kernels/cpu/memory_stream.h"
#ifdef TRAINSCOPE_HAVE_MPI
#include "comm/mpi/point_to_point.h"
#endif

namespace ts {
namespace {

std::uint64_t lastLevelCacheBytes() {
  long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 <= 0) l3 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l3 > 0 ? static_cast<std::uint64_t>(l3) : 32ull << 20;
}

// Finishes a measurement (the run's label and suite step, its figure judged against its link's peak), writes it
// (process 0), and keeps the suspect figures a process printed for its warning line.
struct Emitter {
  RunContext& ctx;
  const LinksOptions& o;
  PeakJudge judge;
  std::vector<SuspectFigure> suspects;
  LinkMeasurement finished(LinkMeasurement m) const {
    m.label = o.label;
    m.step = ctx.step;
    judgePeak(m, judge);
    return m;
  }
  void emit(const LinkMeasurement& finishedOne) {
    if (ctx.boot.rank() != 0 || !ctx.writer) return;
    ctx.writer->add(toJson(finishedOne));
  }
  // A figure this process printed: a suspect one is named again in the warning line at the end.
  void printed(const LinkMeasurement& m) {
    if (m.suspect) suspects.push_back(linkSuspectFigure(m));
  }
};

// STREAM's rule: each array at least 4x the last-level cache, here shared by the host's `here` processes; capped
// at 1 GiB, and at an eighth of the available memory per process, so a large-cache host cannot run out.
std::uint64_t hostMemoryArrayBytes(const LinksOptions& o, std::uint64_t here) {
  if (o.memoryBytes) return o.memoryBytes;
  const std::uint64_t avail =
      static_cast<std::uint64_t>(::sysconf(_SC_AVPHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t arrayBytes = std::clamp<std::uint64_t>(4 * lastLevelCacheBytes() / here, 32ull << 20, 1ull << 30);
  return std::min(arrayBytes, std::max<std::uint64_t>(avail / (8 * here), 16ull << 20));
}

// STREAM's three arrays: a the output, b and c the inputs. Allocated on every process or on none (agreed).
struct StreamArrays {
  std::vector<double> a, b, c;
  StreamArrays(Bootstrap& boot, std::uint64_t arrayBytes) {
    const std::size_t n = arrayBytes / sizeof(double);
    collectively(boot, [&] {
      try {
        a.assign(n, 0.0);
        b.resize(n);
        c.resize(n);
      } catch (const std::bad_alloc&) {
        throw UsageError(fmt::format("--memory-bytes {}: cannot allocate 3 arrays of that size", formatBytes(arrayBytes)));
      }
    });
    for (std::size_t i = 0; i < n; ++i) {
      b[i] = 1.0 + static_cast<double>(i % 7);
      c[i] = 2.0 + static_cast<double>(i % 5);
    }
  }
};

constexpr double kTriadScalar = 3.0;

// This process's times of the kernel (copy or triad), every process starting each iteration together, and the
// elements of its output that are wrong.
std::vector<double> timeStreamKernel(const LinksOptions& o, Bootstrap& boot, StreamArrays& s, bool triad, int threads,
                                     long long& wrong) {
  const std::size_t n = s.a.size();
  std::vector<double> us;
  for (int i = -o.warmup; i < o.iters; ++i) {
    boot.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    if (triad)
      cpu::streamTriad(s.a.data(), s.b.data(), s.c.data(), kTriadScalar, n, threads);
    else
      cpu::streamCopy(s.a.data(), s.b.data(), n, threads);
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    heartbeat::beat();
  }
  wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += s.a[i] != (triad ? s.b[i] + kTriadScalar * s.c[i] : s.b[i]);
  return us;
}

// The host-memory test's sizes: each array's bytes, and the threads each process runs the kernel on.
struct HostMemorySetup {
  std::uint64_t arrayBytes;
  int threads;
};

// One kernel's results as every process gathered them: each process's `iters` times in rank order, and its wrong elements.
struct GatheredRuns {
  std::vector<double> us;
  std::vector<double> wrong;
  std::size_t iters;
};

// One host's figure: its processes' bytes over the slowest one's time, iteration by iteration.
LinkMeasurement hostMeasurement(const std::string& host, const std::vector<std::string>& hosts, const GatheredRuns& runs,
                                bool triad, const HostMemorySetup& setup) {
  LinkMeasurement m;
  m.test = triad ? "host_memory_triad" : "host_memory_copy";
  m.src = m.dst = host;
  m.engine = "cpu";
  m.direction = "uni";
  std::uint64_t procs = 0;
  m.samplesUs.assign(runs.iters, 0.0);
  for (std::size_t p = 0; p < hosts.size(); ++p) {
    if (hosts[p] != host) continue;
    ++procs;
    m.wrong += static_cast<long long>(runs.wrong[p]);
    for (std::size_t i = 0; i < runs.iters; ++i) m.samplesUs[i] = std::max(m.samplesUs[i], runs.us[p * runs.iters + i]);
  }
  const std::uint64_t n = setup.arrayBytes / sizeof(double);
  m.bytes = procs * n * (triad ? cpu::kTriadBytesPerElement : cpu::kCopyBytesPerElement);
  m.link = {"dram", "host memory", std::nullopt};
  m.fields = HostMemoryFields{host, procs, setup.threads, setup.arrayBytes};
  return m;
}

// Every process runs the kernel at once (after a barrier), so the host's memory system is loaded by all
// of them, as training loads it; a host's figure is its processes' bytes over the slowest one's time. Every process
// learns each host's copy figure (copyGbps), the peak of the MPI pairs within that host.
std::size_t hostMemory(const LinksOptions& o, RunContext& ctx, Emitter& out, const std::vector<std::string>& hosts,
                       std::map<std::string, double>& copyGbps) {
  Bootstrap& boot = ctx.boot;
  const std::string me = hosts[boot.rank()];
  const auto here = static_cast<std::uint64_t>(std::count(hosts.begin(), hosts.end(), me));
  const std::uint64_t arrayBytes = hostMemoryArrayBytes(o, here);
  const int threads =
      o.threads ? o.threads : std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN) / static_cast<long>(here)));
  StreamArrays arrays(boot, arrayBytes);
  if (boot.rank() == 0) std::printf("%s", hostMemoryTableHeader(arrayBytes, threads).c_str());
  std::size_t failed = 0;
  for (const char* kernel : {"copy", "triad"}) {
    const bool triad = std::string(kernel) == "triad";
    activity::set(fmt::format("host memory {} of {}", kernel, formatBytes(arrayBytes)));
    long long wrong = 0;
    const std::vector<double> us = timeStreamKernel(o, boot, arrays, triad, threads, wrong);
    const GatheredRuns runs{boot.allGatherDoubles(us), boot.allGatherDoubles({static_cast<double>(wrong)}), us.size()};
    std::vector<std::string> done;
    for (const auto& host : hosts) {
      if (std::find(done.begin(), done.end(), host) != done.end()) continue;
      done.push_back(host);
      const LinkMeasurement m = out.finished(hostMeasurement(host, hosts, runs, triad, {arrayBytes, threads}));
      failed += m.wrong != 0;
      if (!triad) copyGbps[host] = bandwidthOf(m).value_or(0);
      out.emit(m);
      if (boot.rank() == 0) std::printf("%s", hostMemoryTableRow(m).c_str());
    }
  }
  std::fflush(stdout);
  return failed;
}

#ifdef TRAINSCOPE_HAVE_MPI
// The latency, bandwidth and bidirectional bandwidth of one pair of ranks, in that order, each emitted as
// it finishes; rank a measures, every rank takes part in handing its samples (and, for bandwidth, the timed loop's
// wall time after them) to process 0.
std::array<LinkMeasurement, 3> measurePair(const LinksOptions& o, Bootstrap& boot, Emitter& emitter, MpiPointToPoint& p2p, int a,
                                           int b, const std::vector<std::string>& hosts, const LinkClass& link) {
  struct Test {
    const char* name;
    bool latency;
    bool bi;
  };
  constexpr Test kTests[3] = {{"mpi_latency", true, false}, {"mpi_bandwidth", false, false}, {"mpi_bibandwidth", false, true}};
  std::array<LinkMeasurement, 3> out;
  for (int t = 0; t < 3; ++t) {
    const Test& test = kTests[t];
    activity::set(fmt::format("{} between rank {} ({}) and rank {} ({})", test.name, a, hosts[a], b, hosts[b]));
    const int warmup = test.latency ? o.warmup * 10 : o.warmup;
    const int iters = test.latency ? o.latencyIters : o.iters;
    PairSamples s = test.latency ? p2p.pingPong(a, b, o.latencyBytes, warmup, iters)
                                 : p2p.stream(a, b, {o.bandwidthBytes, o.window, warmup, iters, test.bi});
    // Rank a measured; rank 0 writes: hand the samples over.
    std::vector<double> mine(static_cast<std::size_t>(iters) + (test.latency ? 0 : 1), 0.0);
    if (boot.rank() == a) {
      std::copy(s.us.begin(), s.us.end(), mine.begin());
      if (!test.latency) mine.back() = s.totalUs;
    }
    const auto gathered = boot.allGatherDoubles(mine);
    const auto k = static_cast<long>(mine.size());
    LinkMeasurement m;
    m.test = test.name;
    m.src = fmt::format("rank {}", a);
    m.dst = fmt::format("rank {}", b);
    m.engine = "mpi";
    m.direction = test.bi ? "bi" : "uni";
    m.latency = test.latency;
    m.bytes = test.latency ? o.latencyBytes : o.bandwidthBytes * static_cast<std::uint64_t>(o.window) * (test.bi ? 2 : 1);
    m.samplesUs.assign(gathered.begin() + a * k, gathered.begin() + a * k + iters);
    if (!test.latency) m.totalUs = gathered[static_cast<std::size_t>(a * k + iters)];
    m.link = link;
    m.wrong = s.wrong;
    MpiPairFields f;
    f.srcHost = hosts[a];
    f.dstHost = hosts[b];
    f.messageBytes = test.latency ? o.latencyBytes : o.bandwidthBytes;
    f.window = test.latency ? 1 : o.window;
    f.warmup = warmup;
    f.iterations = iters;
    if (!test.latency) f.deliveredBytes = s.deliveredBytes;
    m.fields = f;
    out[t] = emitter.finished(std::move(m));
    emitter.emit(out[t]);
  }
  return out;
}

// The link of ranks on one host: MPI's shared memory, a copy from the sender's memory to the receiver's, whose peak
// is half the host's copy figure of this run (which counts the bytes read and the bytes written), when measured.
LinkClass sharedMemoryLink(const std::map<std::string, double>& copyGbps, const std::string& host) {
  const auto it = copyGbps.find(host);
  if (it == copyGbps.end() || it->second <= 0) return {"shm", "same host: MPI shared memory", std::nullopt};
  return {"shm", "same host: MPI shared memory (peak: half the host memory copy)", it->second / 2};
}

std::size_t mpiPairs(const LinksOptions& o, RunContext& ctx, Emitter& out, const std::vector<std::string>& hosts,
                     const std::vector<std::pair<int, int>>& pairs, const std::map<std::string, double>& copyGbps) {
  Bootstrap& boot = ctx.boot;
  if (pairs.empty()) return 0;
  MpiPointToPoint p2p;
  const bool leader = boot.rank() == 0;
  const auto& inventories = (*ctx.metadata)["hosts"];
  auto inventoryOf = [&](const std::string& host) -> const nlohmann::json& {
    for (const auto& h : inventories)
      if (h["hostname"] == host) return h;
    return inventories[0];
  };
  if (leader) std::printf("%s", mpiPairsTableHeader(o, pairs.size()).c_str());
  std::map<std::pair<std::string, std::string>, std::vector<PairFigure>> groups;  // (test, link type)
  std::size_t failed = 0;
  for (const auto& [a, b] : pairs) {
    const LinkClass link = hosts[a] == hosts[b] ? sharedMemoryLink(copyGbps, hosts[a]) : networkLink(inventoryOf(hosts[a]));
    const std::array<LinkMeasurement, 3> tests = measurePair(o, boot, out, p2p, a, b, hosts, link);
    long long pairWrong = 0;
    for (const LinkMeasurement& m : tests) {
      pairWrong += m.wrong;
      groups[{m.test, link.type}].push_back({m.src, m.dst, hosts[a], hosts[b], figureOf(m)});
    }
    failed += pairWrong != 0;
    if (leader) {
      for (const LinkMeasurement& m : tests) out.printed(m);
      std::printf("%s", printableLines(mpiPairsTableRow(a, b, tests)).c_str());  // the peers' host names
      std::fflush(stdout);
    }
  }
  for (const auto& [key, group] : groups) {
    if (group.size() < 3) continue;  // a median of one or two says nothing about outliers
    const LinkOutliersRecord rec = findOutliers(key.first, key.second, group, o.outlierFraction, key.first == "mpi_latency");
    if (leader && ctx.writer) ctx.writer->add(toJson(rec));
    if (leader) std::printf("%s", printableLines(outlierLines(rec)).c_str());
  }
  return failed;
}
#endif

}  // namespace

std::size_t runLinksStep(const LinksOptions& o, RunContext& ctx) {
  Bootstrap& boot = ctx.boot;
  // This process's last-level cache stands for every host's in the cause of a suspect figure (hosts of one job are
  // alike as a rule; the figure is flagged either way, only its likely cause could read otherwise).
  Emitter out{ctx, o, {plantedCeilingScale(faultFromEnvironment(), boot.rank()), lastLevelCacheBytes()}, {}};
  if (o.gpu) collectively(boot, [&] { validateGpuSelection(o); });  // before anything is measured
  const auto hosts = boot.allGatherStrings(hostName());
  // The pairs (a --pairs file names hosts) are read before anything is measured.
  std::vector<std::pair<int, int>> pairs;
  if (o.mpi && boot.size() > 1) collectively(boot, [&] { pairs = linkPairs(o.pairs, hosts); });
  Watchdog watchdog(o.timeoutS, boot.rank(), endAllRanksOnTimeout(o.timeoutS, boot));
  WatchdogScope guard(watchdog);
  std::size_t failed = 0;
  std::map<std::string, double> copyGbps;  // host -> its memory copy figure, where measured
  if (o.memory) failed += hostMemory(o, ctx, out, hosts, copyGbps);
  if (o.mpi) {
#ifdef TRAINSCOPE_HAVE_MPI
    if (boot.kind() == BootstrapKind::kMpi && boot.size() > 1)
      failed += mpiPairs(o, ctx, out, hosts, pairs, copyGbps);
    else if (boot.rank() == 0)
      std::printf("#\n# MPI point-to-point: skipped (run under mpirun with 2 or more ranks)\n");
#else
    if (boot.rank() == 0) std::printf("#\n# MPI point-to-point: skipped (built without MPI)\n");
#endif
  }
  if (o.gpu) {
    // GPU tests run on the first process of each host: their records travel to process 0, which writes.
    nlohmann::json mine = nlohmann::json::array();
    failed += runGpuLinks(o, ctx, [&](const LinkMeasurement& m) {
      const LinkMeasurement done = out.finished(m);
      out.printed(done);
      mine.push_back(toJson(done));
    });
    const auto all = boot.allGatherStrings(jsonText(mine));
    if (boot.rank() == 0 && ctx.writer)
      for (const auto& s : all)
        for (const auto& rec : nlohmann::json::parse(s)) ctx.writer->add(rec);
    failed = static_cast<std::size_t>(boot.sum(static_cast<long long>(failed)));
  }
  activity::set("");
  // Each process names the suspect figures of the tables it printed (process 0: host memory and MPI; the first process
  // of each host: its GPUs).
  if (const std::string warning = linkSuspectWarning(out.suspects); !warning.empty())
    std::printf("%s\n", printableLines(warning).c_str());
  std::fflush(stdout);
  if (failed && boot.rank() == 0)
    std::fprintf(stderr, "trainscope: error: %zu link test(s) failed their payload check\n", failed);
  return failed;
}

int runLinks(const LinksOptions& o, const std::vector<std::string>& argv) {
  auto session = RunSession::open(BootstrapKind::kAuto, launchedByMpi(), "links", argv, toJson(o), o.jsonPath, o.timeoutS);
  const std::size_t failed = runLinksStep(o, session->context());
  session->finish();
  return failed ? 1 : 0;
}

}  // namespace ts
