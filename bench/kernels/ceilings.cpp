#include "bench/kernels/ceilings.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/heartbeat.h"
#include "base/units.h"
#include "bench/failures/activity.h"
#include "bench/kernels/cpu_contention.h"
#include "bench/results/record_json.h"
#include "bench/results/result_writer.h"
#include "bench/results/stats.h"
#include "bench/telemetry/compute_clock.h"
#include "kernels/cpu/memory_stream.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

double hostTimeUs(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// A copy of workingSet bytes (two arrays of half each) on `threads` threads, `reps` passes per run.
CeilingSpec copySpec(MemoryLevel level, double workingSet, double capacity, int threads, int reps) {
  CeilingSpec s =
      memoryCeilingSpec(level, workingSet, capacity,
                        fmt::format("copy of {} in {}, {} thread(s), {} pass(es) a run",
                                    formatBytes(static_cast<std::uint64_t>(workingSet)), memoryLevelLabel(level), threads, reps));
  s.make = [workingSet, threads, reps] {
    const std::size_t n = static_cast<std::size_t>(workingSet) / 2 / sizeof(double);
    auto a = std::make_shared<std::vector<double>>(n, 0.0), b = std::make_shared<std::vector<double>>(n, 1.0);
    return CeilingRunner{
        [a, b, n, threads, reps] { return hostTimeUs([&] { cpu::streamCopyRepeated(a->data(), b->data(), n, threads, reps); }); },
        static_cast<double>(n * cpu::kCopyBytesPerElement) * reps};
  };
  return s;
}

}  // namespace

CeilingSpec memoryCeilingSpec(MemoryLevel level, double workingSet, double capacity, std::string source) {
  CeilingSpec s;
  s.kind = CeilingKind::kMemory;
  s.level = level;
  s.workingSetBytes = workingSet;
  s.capacityBytes = capacity;
  s.source = std::move(source);
  return s;
}

std::vector<CeilingSpec> cpuGemmCeilingSpecs() {
  // The large squares run long enough (tens to hundreds of ms) for other processes to preempt one of
  // OpenBLAS's threads in every run on a busy host, which stalls the others; 512² runs about a millisecond,
  // like the kernels it is a ceiling for, and so has the same chance of running undisturbed.
  std::vector<CeilingSpec> out;
  for (std::int64_t n : {512, 1024, 2048}) {
    const KernelShape shape{fmt::format("square {}", n), {{"M", n}, {"N", n}, {"K", n}}};
    CeilingSpec s;
    s.source = fmt::format("gemm {} float32 (OpenBLAS)", shape.name);
    s.make = [shape] {
      std::shared_ptr<KernelCase> kc = kernel_ops::gemm().make(shape, KernelSettings{});
      return CeilingRunner{[kc] { return hostTimeUs([&] { kc->run(); }); }, kc->flops()};
    };
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<CeilingSpec> cpuMemoryCeilingSpecs(int threads, const std::vector<CacheLevelSize>& caches) {
  // Runs short enough (a millisecond or so) to have a chance of running undisturbed on a busy host, as the
  // kernels do, yet long enough that starting the threads is a small part of them: 256 MiB copied per run
  // from a cache. DRAM: 512 MiB (as STREAM would), or four times the largest cache, copied once a run.
  constexpr double kBytesPerRun = 256.0 * (1 << 20);
  std::vector<CeilingSpec> out;
  double previous = 0, largest = 0;
  for (const CacheLevelSize& c : caches) {
    if (c.level < 1 || c.level > 3) continue;
    const double capacity = static_cast<double>(c.bytes);
    largest = std::max(largest, capacity);
    const std::optional<double> ws = cacheCopyWorkingSet(previous, capacity);
    previous = std::max(previous, capacity);
    if (!ws) continue;
    const int reps = std::max(1, static_cast<int>(kBytesPerRun / *ws));
    const MemoryLevel level = c.level == 1 ? MemoryLevel::kL1 : c.level == 2 ? MemoryLevel::kL2 : MemoryLevel::kL3;
    out.push_back(copySpec(level, *ws, capacity, threads, reps));
  }
  out.push_back(copySpec(MemoryLevel::kDram, std::max<double>(512.0 * (1 << 20), 4 * largest),
                         std::numeric_limits<double>::infinity(), threads, 1));
  return out;
}

CeilingSink writerSink(ResultWriter* writer) {
  if (!writer) return {};
  return [writer](const nlohmann::json& rec) { writer->add(rec); };
}

CeilingSet::CeilingSet(std::vector<CeilingSpec> specs, CeilingOptions o) : o_(std::move(o)) {
  std::vector<std::size_t> all;
  for (auto& s : specs) {
    all.push_back(entries_.size());
    Entry e;
    e.spec = std::move(s);
    entries_.push_back(std::move(e));
  }
  measure(all, "");
}

double CeilingSet::measure(const std::vector<std::size_t>& which, const std::string& trigger) {
  if (which.empty()) return 0;
  OthersCpuMeter meter;
  std::vector<CeilingRunner> runners;
  for (std::size_t i : which) {
    activity::set(fmt::format("{} ceiling: {}", ceilingKindName(entries_[i].spec.kind), entries_[i].spec.source));
    runners.push_back(entries_[i].spec.make());
  }
  const CeilingProtocol p = kCeilingProtocol;
  std::vector<std::vector<double>> us(runners.size());
  for (int round = 0; round < p.warmup + p.trials; ++round) {
    activity::set(fmt::format("ceilings{}: round {} of {} ({} warm-up)", trigger.empty() ? "" : " (re-check)", round + 1,
                              p.warmup + p.trials, p.warmup));
    for (std::size_t k = 0; k < runners.size(); ++k) {
      const double t = runners[k].timeUs();
      if (round >= p.warmup) us[k].push_back(t);
      heartbeat::beat();
    }
  }
  const std::optional<double> others = o_.hostContention ? meter.fraction() : std::nullopt;
  double best = 0;
  for (std::size_t k = 0; k < runners.size(); ++k) {
    Entry& e = entries_[which[k]];
    const KernelCeilingRecord rec = recordOf(e.spec, summarize(us[k]), runners[k].work, others, trigger);
    best = std::max(best, rec.value);
    if (rec.value > e.value) {
      e.value = rec.value;
      e.clock = rec.clockMhz;
      e.others = others;
    }
    if (!trigger.empty()) e.rechecked = true;
    if (o_.emit) o_.emit(toJson(rec));
  }
  activity::set("");
  return best;
}

KernelCeilingRecord CeilingSet::recordOf(const CeilingSpec& spec, const Stats& s, double work, std::optional<double> others,
                                         const std::string& trigger) const {
  KernelCeilingRecord r;
  r.ceiling = spec.kind;
  r.value = work / (s.min * 1e-6) / (spec.kind == CeilingKind::kCompute ? 1e12 : 1e9) * o_.plantedScale;
  r.source = spec.source;
  r.time = s;
  r.clockMhz = readComputeClockMhz(spec.cudaDevice);
  r.warmup = kCeilingProtocol.warmup;
  r.trials = kCeilingProtocol.trials;
  r.othersCpuFraction = others;
  r.level = spec.level;
  r.workingSetBytes = spec.workingSetBytes;
  r.capacityBytes = spec.capacityBytes;
  r.recheckOf = trigger;
  if (planted()) r.plantedFaultScale = o_.plantedScale;
  r.step = o_.step;
  return r;
}

bool CeilingSet::matches(const Entry& e, CeilingKind kind, MemoryLevel level) const {
  return e.spec.kind == kind && (kind == CeilingKind::kCompute || e.spec.level == level);
}

const CeilingSet::Entry* CeilingSet::bestOf(CeilingKind kind, MemoryLevel level) const {
  const Entry* best = nullptr;
  for (const Entry& e : entries_)
    if (matches(e, kind, level) && (!best || e.value > best->value)) best = &e;
  return best;
}

double CeilingSet::computeTflops() const {
  const Entry* e = bestOf(CeilingKind::kCompute, MemoryLevel::kDram);
  return e ? e->value : 0;
}

std::vector<MemoryCeiling> CeilingSet::memoryLevels() const {
  std::vector<MemoryCeiling> out;
  for (const Entry& e : entries_)
    if (e.spec.kind == CeilingKind::kMemory) out.push_back({e.spec.level, e.spec.capacityBytes, e.value});
  std::stable_sort(out.begin(), out.end(), [](const MemoryCeiling& a, const MemoryCeiling& b) { return a.level < b.level; });
  return out;
}

bool CeilingSet::recheck(CeilingKind kind, MemoryLevel level, const std::string& trigger) {
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (matches(entries_[i], kind, level)) {
      if (entries_[i].rechecked) return false;
      which.push_back(i);
    }
  const Entry* before = bestOf(kind, level);
  if (!before) return false;
  const double was = before->value;
  const double now = measure(which, trigger);
  const std::string name = kind == CeilingKind::kCompute ? "compute" : fmt::format("{} memory", memoryLevelLabel(level));
  const char* unit = kind == CeilingKind::kCompute ? "TFLOP/s" : "GB/s";
  std::printf("# re-measured the %s ceiling because %s landed above it: %.4g %s now, %.4g before; the ceiling is the better\n",
              name.c_str(), trigger.c_str(), now, unit, was);
  std::fflush(stdout);
  return true;
}

SuspectCause CeilingSet::likelyCause(CeilingKind kind, MemoryLevel level) const {
  const Entry* e = bestOf(kind, level);
  return likelySuspectCause(planted(), e ? e->others : std::nullopt, kind);
}

std::string CeilingSet::computeSource() const {
  const Entry* e = bestOf(CeilingKind::kCompute, MemoryLevel::kDram);
  return e ? fmt::format("{}, best of {} after {} warm-up{}", e->spec.source, kCeilingProtocol.trials, kCeilingProtocol.warmup,
                         e->rechecked ? ", re-measured once" : "")
           : "";
}

nlohmann::json CeilingSet::computeClockMhz() const {
  const Entry* e = bestOf(CeilingKind::kCompute, MemoryLevel::kDram);
  return e ? orNull(e->clock) : nlohmann::json();
}

bool CeilingSet::computeRechecked() const {
  const Entry* e = bestOf(CeilingKind::kCompute, MemoryLevel::kDram);
  return e && e->rechecked;
}

std::string CeilingSet::consoleLine() const {
  std::vector<std::string> parts;
  if (const Entry* c = bestOf(CeilingKind::kCompute, MemoryLevel::kDram))
    parts.push_back(fmt::format("compute {:.4g} TFLOP/s ({})", c->value, c->spec.source));
  std::string memory;
  for (const MemoryCeiling& m : memoryLevels())
    memory += fmt::format("{} {} {:.4g}", memory.empty() ? "" : ",", memoryLevelLabel(m.level), m.gbps);
  if (!memory.empty()) parts.push_back(fmt::format("memory{} GB/s (copies)", memory));
  std::optional<double> others;
  for (const Entry& e : entries_)
    if (e.others) others = std::max(others.value_or(0.0), *e.others);
  if (others && *others >= kBusyHostFraction)
    parts.push_back(fmt::format("other processes took {:.0f}% of the CPUs meanwhile", 100 * *others));
  if (planted()) parts.push_back(fmt::format("scaled x{:g} by a planted fault", o_.plantedScale));
  return fmt::format("# ceilings (best of {} after {} warm-up, trials interleaved): {}", kCeilingProtocol.trials,
                     kCeilingProtocol.warmup, fmt::join(parts, "; "));
}

}  // namespace ts
