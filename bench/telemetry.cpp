#include "bench/telemetry.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/nvml_loader.h"
#include "bench/stats.h"

namespace ts {
namespace {

double nowS() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The mean current frequency over the CPUs that expose one (MHz), or nothing.
std::optional<double> cpuFrequencyMhz() {
  namespace fs = std::filesystem;
  std::error_code ec;
  double sum = 0;
  int n = 0;
  for (const auto& entry : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || name.find_first_not_of("0123456789", 3) != std::string::npos) continue;
    std::ifstream in(entry.path() / "cpufreq" / "scaling_cur_freq");
    double khz = 0;
    if (in >> khz && khz > 0) {
      sum += khz / 1e3;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

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

double telemetryIntervalFromEnvironment() {
  const char* v = std::getenv("TRAINSCOPE_TELEMETRY_MS");
  if (!v || !*v) return 0.2;
  char* end = nullptr;
  const double ms = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(ms >= 0)) throw UsageError(fmt::format("TRAINSCOPE_TELEMETRY_MS={}: not a number of milliseconds >= 0", v));
  return ms / 1e3;
}

struct TelemetrySampler::Gpus {
  nvml::Library lib;
  std::vector<nvml::Device> devices;
  Gpus() {
    if (!lib.ok()) return;
    for (unsigned i = 0; i < lib.deviceCount(); ++i) {
      nvml::Device d{};
      if (lib.deviceByIndex(i, &d)) devices.push_back(d);
    }
  }
  nlohmann::json sample() const {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const nvml::Device d = devices[i];
      unsigned sm = 0, mem = 0, mw = 0, temp = 0, util = 0, memUtil = 0, tx = 0, rx = 0;
      unsigned long long reasons = 0;
      const bool haveUtil = lib.utilizationPercent(d, &util, &memUtil);
      const bool haveReasons = lib.clocksEventReasons(d, &reasons);
      nlohmann::json names = nlohmann::json::array();
      if (haveReasons)
        for (const auto& n : nvml::clocksEventReasonNames(reasons)) names.push_back(n);
      out.push_back({{"index", i},
                     {"sm_clock_mhz", orNull(lib.currentClockMhz(d, 1, &sm), sm)},
                     {"mem_clock_mhz", orNull(lib.currentClockMhz(d, 2, &mem), mem)},
                     {"power_w", orNull(lib.powerMilliwatts(d, &mw), mw / 1e3)},
                     {"temperature_c", orNull(lib.temperatureC(d, &temp), temp)},
                     {"gpu_util_percent", orNull(haveUtil, util)},
                     {"mem_util_percent", orNull(haveUtil, memUtil)},
                     {"throttle_reasons", haveReasons ? names : nlohmann::json()},
                     {"throttled", haveReasons ? nlohmann::json(nvml::throttling(reasons)) : nlohmann::json()},
                     {"pcie_tx_gbps", orNull(lib.pcieThroughputKBps(d, false, &tx), tx * 1e3 / 1e9)},
                     {"pcie_rx_gbps", orNull(lib.pcieThroughputKBps(d, true, &rx), rx * 1e3 / 1e9)}});
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

TelemetrySampler::TelemetrySampler(double intervalS) : intervalS_(intervalS), startS_(nowS()), gpus_(std::make_unique<Gpus>()) {
  lastCpu_ = parseProcStat(readFile("/proc/stat"));
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

nlohmann::json TelemetrySampler::sample() {
  nlohmann::json s = {{"t_s", nowS() - startS_}};
  const std::optional<CpuTimes> cpu = parseProcStat(readFile("/proc/stat"));
  s["cpu_busy_fraction"] = cpu && lastCpu_ && cpu->total > lastCpu_->total ? nlohmann::json(busyFraction(*lastCpu_, *cpu)) : nlohmann::json();
  if (cpu) lastCpu_ = cpu;
  const std::optional<double> load = parseLoadAverage(readFile("/proc/loadavg"));
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
  for (std::size_t g = 0; g < gpus; ++g) {
    std::set<std::string> reasons;
    int throttledSamples = 0;
    for (const auto& s : samples) {
      if (s["gpus"].size() <= g) continue;
      const auto& x = s["gpus"][g];
      if (x["throttled"].is_boolean() && x["throttled"].get<bool>()) {
        ++throttledSamples;
        for (const auto& r : x["throttle_reasons"])
          if (r != "gpu_idle") reasons.insert(r.get<std::string>());
      }
    }
    anyThrottled = anyThrottled || throttledSamples > 0;
    const auto& maxClocks = sampled.value("gpu_max_sm_clock_mhz", nlohmann::json::array());
    gpuSummary.push_back({{"index", g},
                          {"sm_clock_mhz", range(seriesOf(samples, "sm_clock_mhz", static_cast<int>(g)))},
                          {"max_sm_clock_mhz", g < maxClocks.size() ? maxClocks[g] : nlohmann::json()},
                          {"power_w", range(seriesOf(samples, "power_w", static_cast<int>(g)))},
                          {"temperature_c", range(seriesOf(samples, "temperature_c", static_cast<int>(g)))},
                          {"gpu_util_percent", range(seriesOf(samples, "gpu_util_percent", static_cast<int>(g)))},
                          {"throttled_samples", throttledSamples},
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
            {"load1", range(seriesOf(samples, "load1"))},
            {"cpu_freq_mhz", range(seriesOf(samples, "cpu_freq_mhz"))},
            {"gpus", gpuSummary},
            {"throttled", anyThrottled}}}};
}

}  // namespace ts
