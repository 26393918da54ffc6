#include "bench/telemetry/telemetry.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "base/error.h"
#include "base/steady_seconds.h"
#include "base/text_file.h"
#include "bench/inventory/nvml_loader.h"
#include "bench/results/stats.h"
#include "bench/telemetry/compute_clock.h"

namespace ts {
namespace {

nlohmann::json orNull(bool ok, double v) { return ok ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

std::optional<CpuTimes> parseProcStat(const std::string& text) {
  std::istringstream in(text);
  std::string label;
  if (!(in >> label) || label != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  unsigned long long v[8] = {};
  int n = 0;
  while (n < 8 && in >> v[n]) ++n;
  if (n < 4) return std::nullopt;
  CpuTimes t;
  for (int i = 0; i < n; ++i) t.total += v[i];
  t.busy = t.total - v[3] - (n > 4 ? v[4] : 0);  // idle and iowait are not busy
  return t;
}

std::optional<CpuTimes> readProcStat() { return parseProcStat(readTextFile("/proc/stat")); }

double busyFraction(const CpuTimes& a, const CpuTimes& b) {
  if (b.total <= a.total || b.busy < a.busy) return 0;
  const double f = static_cast<double>(b.busy - a.busy) / static_cast<double>(b.total - a.total);
  return f < 0 ? 0 : f > 1 ? 1 : f;
}

std::optional<double> parseLoadAverage(const std::string& text) {
  std::istringstream in(text);
  double load = 0;
  if (!(in >> load) || load < 0) return std::nullopt;
  return load;
}

std::optional<unsigned long long> parseProcessTicks(const std::string& text) {
  const std::size_t close = text.rfind(')');  // the command name, in parentheses, may hold anything
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(text.substr(close + 1));
  std::string field;
  // After the name: state (field 3) ... utime (14), stime (15).
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 13; ++i)
    if (!(in >> field)) return std::nullopt;
  if (!(in >> utime >> stime)) return std::nullopt;
  return utime + stime;
}

double othersBusyFraction(const CpuTimes& a, const CpuTimes& b, double ownTicks) {
  if (b.total <= a.total || b.busy < a.busy) return 0;
  const double others = static_cast<double>(b.busy - a.busy) - ownTicks;
  const double f = others / static_cast<double>(b.total - a.total);
  return f < 0 ? 0 : f > 1 ? 1 : f;
}

std::optional<double> counterRateGBps(unsigned long long beforeKiB, unsigned long long afterKiB, double seconds) {
  if (!(seconds > 0) || afterKiB < beforeKiB) return std::nullopt;
  return static_cast<double>(afterKiB - beforeKiB) * 1024 / seconds / 1e9;
}

bool lowClockUnderLoad(const nlohmann::json& g, const nlohmann::json& maxSm) {
  const auto number = [&](const char* k) { return g.contains(k) && g[k].is_number(); };
  return number("sm_clock_mhz") && number("gpu_util_percent") && maxSm.is_number() && maxSm.get<double>() > 0 &&
         g["gpu_util_percent"].get<double>() >= kBusyGpuPercent &&
         g["sm_clock_mhz"].get<double>() < kLowClockFraction * maxSm.get<double>();
}

double telemetryIntervalFromEnvironment() {
  const char* v = std::getenv("TRAINSCOPE_TELEMETRY_MS");
  if (!v || !*v) return 0.2;
  char* end = nullptr;
  const double ms = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(ms >= 0))
    throw UsageError(fmt::format("TRAINSCOPE_TELEMETRY_MS={}: not a number of milliseconds >= 0", v));
  return ms / 1e3;
}

struct TelemetrySampler::Gpus {
  struct Counters {  // the last NVLink reading of a GPU, for the rate over the next interval
    double atS = 0;
    unsigned long long txKiB = 0, rxKiB = 0;
  };
  nvml::Library lib;
  std::vector<nvml::Device> devices;
  std::vector<std::optional<Counters>> nvlink;
  Gpus() {
    if (!lib.ok()) return;
    for (unsigned i = 0; i < lib.deviceCount(); ++i) {
      nvml::Device d{};
      if (lib.deviceByIndex(i, &d)) devices.push_back(d);
    }
    nvlink.resize(devices.size());
  }
  // NVLink GB/s since the last reading (null for the first one, and on GPUs without the counters).
  std::pair<nlohmann::json, nlohmann::json> nvlinkRates(std::size_t i) {
    Counters now{steadySeconds()};
    if (!lib.nvlinkDataKiB(devices[i], &now.txKiB, &now.rxKiB)) return {nullptr, nullptr};
    const std::optional<Counters> before = std::exchange(nvlink[i], now);
    if (!before) return {nullptr, nullptr};
    const auto tx = counterRateGBps(before->txKiB, now.txKiB, now.atS - before->atS);
    const auto rx = counterRateGBps(before->rxKiB, now.rxKiB, now.atS - before->atS);
    return {tx ? nlohmann::json(*tx) : nlohmann::json(), rx ? nlohmann::json(*rx) : nlohmann::json()};
  }
  nlohmann::json sample() {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const nvml::Device d = devices[i];
      const auto [nvlinkTx, nvlinkRx] = nvlinkRates(i);
      unsigned sm = 0, mem = 0, mw = 0, temp = 0, util = 0, memUtil = 0, tx = 0, rx = 0;
      unsigned long long reasons = 0;
      // Each read before its value is used: in one call's arguments the order of the two is unspecified.
      const bool haveSm = lib.currentClockMhz(d, 1, &sm), haveMem = lib.currentClockMhz(d, 2, &mem);
      const bool havePower = lib.powerMilliwatts(d, &mw), haveTemp = lib.temperatureC(d, &temp);
      const bool haveTx = lib.pcieThroughputKBps(d, false, &tx), haveRx = lib.pcieThroughputKBps(d, true, &rx);
      const bool haveUtil = lib.utilizationPercent(d, &util, &memUtil);
      const bool haveReasons = lib.clocksEventReasons(d, &reasons);
      nlohmann::json names = nlohmann::json::array();
      if (haveReasons)
        for (const auto& n : nvml::clocksEventReasonNames(reasons)) names.push_back(n);
      out.push_back({{"index", i},
                     {"sm_clock_mhz", orNull(haveSm, sm)},
                     {"mem_clock_mhz", orNull(haveMem, mem)},
                     {"power_w", orNull(havePower, mw / 1e3)},
                     {"temperature_c", orNull(haveTemp, temp)},
                     {"gpu_util_percent", orNull(haveUtil, util)},
                     {"mem_util_percent", orNull(haveUtil, memUtil)},
                     {"throttle_reasons", haveReasons ? names : nlohmann::json()},
                     {"throttled", haveReasons ? nlohmann::json(nvml::throttling(reasons)) : nlohmann::json()},
                     {"pcie_tx_gbps", orNull(haveTx, tx * 1e3 / 1e9)},
                     {"pcie_rx_gbps", orNull(haveRx, rx * 1e3 / 1e9)},
                     {"nvlink_tx_gbps", nvlinkTx},
                     {"nvlink_rx_gbps", nvlinkRx}});
    }
    return out;
  }
  nlohmann::json maxSmClocks() const {
    nlohmann::json out = nlohmann::json::array();
    for (const nvml::Device d : devices) {
      unsigned mhz = 0;
      out.push_back(orNull(lib.maxClockMhz(d, 1, &mhz), mhz));
    }
    return out;
  }
};

TelemetrySampler::TelemetrySampler(double intervalS, std::vector<int> runPids)
    : intervalS_(intervalS), startS_(steadySeconds()), runPids_(std::move(runPids)), gpus_(std::make_unique<Gpus>()) {
  lastCpu_ = readProcStat();
  ownTicksSinceLastSample();  // the baseline of every process's counter
  samples_.push_back(sample());
  thread_ = std::thread([this] { run(); });
}

TelemetrySampler::~TelemetrySampler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

namespace {

// The children of a process, from every thread's `children` file (Linux 3.5+ with CONFIG_PROC_CHILDREN;
// where absent, only the run's own processes count as the run's).
std::vector<int> childrenOf(int pid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::istringstream in(readTextFile((task.path() / "children").string()));
    for (int c; in >> c;) out.push_back(c);
  }
  return out;
}

}  // namespace

// CPU jiffies the run's processes and their descendants (scale's child runs, say) used since the last
// call. A process first seen counts from its start: it began within the interval.
unsigned long long TelemetrySampler::ownTicksSinceLastSample() {
  std::map<int, unsigned long long> now;
  std::vector<int> todo = runPids_;
  while (!todo.empty() && now.size() < 4096) {  // the bound keeps a fork bomb from stalling the sampler
    const int pid = todo.back();
    todo.pop_back();
    if (now.count(pid)) continue;
    const std::optional<unsigned long long> ticks = parseProcessTicks(readTextFile(fmt::format("/proc/{}/stat", pid)));
    if (!ticks) continue;  // gone
    now[pid] = *ticks;
    for (int c : childrenOf(pid)) todo.push_back(c);
  }
  unsigned long long used = 0;
  for (const auto& [pid, ticks] : now) {
    const auto before = lastOwnTicks_.find(pid);
    const unsigned long long since = before == lastOwnTicks_.end() ? 0 : before->second;
    if (ticks > since) used += ticks - since;
  }
  lastOwnTicks_ = std::move(now);
  return used;
}

nlohmann::json TelemetrySampler::sample() {
  nlohmann::json s = {{"t_s", steadySeconds() - startS_}};
  const std::optional<CpuTimes> cpu = readProcStat();
  const unsigned long long own = ownTicksSinceLastSample();
  const bool interval = cpu && lastCpu_ && cpu->total > lastCpu_->total;
  s["cpu_busy_fraction"] = interval ? nlohmann::json(busyFraction(*lastCpu_, *cpu)) : nlohmann::json();
  s["cpu_busy_others_fraction"] = interval && !runPids_.empty()
                                      ? nlohmann::json(othersBusyFraction(*lastCpu_, *cpu, static_cast<double>(own)))
                                      : nlohmann::json();
  if (cpu) lastCpu_ = cpu;
  const std::optional<double> load = parseLoadAverage(readTextFile("/proc/loadavg"));
  s["load1"] = load ? nlohmann::json(*load) : nlohmann::json();
  const std::optional<double> mhz = cpuFrequencyMhz();
  s["cpu_freq_mhz"] = mhz ? nlohmann::json(*mhz) : nlohmann::json();
  s["gpus"] = gpus_->sample();
  return s;
}

void TelemetrySampler::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (wake_.wait_for(lock, std::chrono::duration<double>(intervalS_), [&] { return stopping_; })) break;
    lock.unlock();
    nlohmann::json s = sample();  // outside the lock: stop() must not wait for NVML
    lock.lock();
    samples_.push_back(std::move(s));
  }
}

nlohmann::json TelemetrySampler::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return nullptr;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  samples_.push_back(sample());
  return {{"interval_s", intervalS_}, {"gpu_max_sm_clock_mhz", gpus_->maxSmClocks()}, {"samples", std::move(samples_)}};
}

namespace {

nlohmann::json range(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  const Stats s = summarize(v);
  return {{"min", s.min}, {"median", s.median}, {"max", s.max}};
}

std::vector<double> seriesOf(const nlohmann::json& samples, const std::string& key, int gpu = -1) {
  std::vector<double> out;
  for (const auto& s : samples) {
    const nlohmann::json* v = &s;
    if (gpu >= 0) {
      if (!s.contains("gpus") || s["gpus"].size() <= static_cast<std::size_t>(gpu)) continue;
      v = &s["gpus"][static_cast<std::size_t>(gpu)];
    }
    if (v->contains(key) && (*v)[key].is_number()) out.push_back((*v)[key].get<double>());
  }
  return out;
}

}  // namespace

nlohmann::json telemetryRecord(const std::string& host, int process, const nlohmann::json& sampled) {
  const nlohmann::json& samples = sampled["samples"];
  std::size_t gpus = 0;
  for (const auto& s : samples) gpus = std::max(gpus, s.value("gpus", nlohmann::json::array()).size());
  nlohmann::json gpuSummary = nlohmann::json::array();
  bool anyThrottled = false;
  const auto& maxClocks = sampled.value("gpu_max_sm_clock_mhz", nlohmann::json::array());
  for (std::size_t g = 0; g < gpus; ++g) {
    const nlohmann::json maxSm = g < maxClocks.size() ? maxClocks[g] : nlohmann::json();
    std::set<std::string> reasons;
    int throttledSamples = 0, lowClockSamples = 0;
    for (const auto& s : samples) {
      if (s["gpus"].size() <= g) continue;
      const auto& x = s["gpus"][g];
      if (x["throttled"].is_boolean() && x["throttled"].get<bool>()) {
        ++throttledSamples;
        for (const auto& r : x["throttle_reasons"])
          if (r != "gpu_idle") reasons.insert(r.get<std::string>());
      }
      lowClockSamples += lowClockUnderLoad(x, maxSm);
    }
    anyThrottled = anyThrottled || throttledSamples > 0 || lowClockSamples > 0;
    gpuSummary.push_back({{"index", g},
                          {"sm_clock_mhz", range(seriesOf(samples, "sm_clock_mhz", static_cast<int>(g)))},
                          {"max_sm_clock_mhz", maxSm},
                          {"mem_clock_mhz", range(seriesOf(samples, "mem_clock_mhz", static_cast<int>(g)))},
                          {"power_w", range(seriesOf(samples, "power_w", static_cast<int>(g)))},
                          {"temperature_c", range(seriesOf(samples, "temperature_c", static_cast<int>(g)))},
                          {"gpu_util_percent", range(seriesOf(samples, "gpu_util_percent", static_cast<int>(g)))},
                          {"throttled_samples", throttledSamples},
                          {"low_clock_samples", lowClockSamples},
                          {"throttle_reasons", reasons}});
  }
  return {{"kind", "telemetry"},
          {"host", host},
          {"process", process},
          {"interval_s", sampled["interval_s"]},
          {"samples", samples},
          {"summary",
           {{"duration_s", samples.empty() ? 0.0 : samples.back()["t_s"].get<double>()},
            {"cpu_busy_fraction", range(seriesOf(samples, "cpu_busy_fraction"))},
            {"cpu_busy_others_fraction", range(seriesOf(samples, "cpu_busy_others_fraction"))},
            {"load1", range(seriesOf(samples, "load1"))},
            {"cpu_freq_mhz", range(seriesOf(samples, "cpu_freq_mhz"))},
            {"gpus", gpuSummary},
            {"throttled", anyThrottled}}}};
}

}  // namespace ts
