#pragma once
// Telemetry: what the machine did while a run measured. A thread samples, every interval (200 ms unless
// TRAINSCOPE_TELEMETRY_MS says otherwise; 0 turns it off), the CPU (busy fraction from /proc/stat, the part of it
// used by processes outside the run — what `compare` calls contention —, load from /proc/loadavg, frequency from
// /sys/devices/system/cpu/cpu*/cpufreq where the kernel exposes it) and every GPU through NVML, loaded at run time (SM and memory
// clocks, power, temperature, utilisation, the reasons the clocks are held down, PCIe throughput, and NVLink throughput from the
// driver's byte counters where the GPU has NVLink). Absent NVML or an absent counter
// is not an error: the field is null. One process per host samples; the result gets one
// `kind: "telemetry"` record per host, with the time series and a summary that says whether the
// clocks throttled.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts {

// The aggregate "cpu" line of /proc/stat: busy and total jiffies.
struct CpuTimes {
  unsigned long long busy = 0, total = 0;
};
std::optional<CpuTimes> parseProcStat(const std::string& text);
std::optional<CpuTimes> readProcStat();                              // this host's, now
double busyFraction(const CpuTimes& before, const CpuTimes& after);  // in [0, 1]; 0 when no time passed
std::optional<double> parseLoadAverage(const std::string& text);     // the 1-minute load
// utime + stime of one process (every thread of it), in the jiffies /proc/stat counts, from the text of
// /proc/<pid>/stat; nothing for text that is not such a line. The command name may hold spaces and ')'.
std::optional<unsigned long long> parseProcessTicks(const std::string& statText);
// The share of the machine's CPU time that processes outside the run used between two readings: busy
// jiffies minus the run's own (its processes and their children), over all jiffies; in [0, 1].
double othersBusyFraction(const CpuTimes& before, const CpuTimes& after, double ownTicks);

// GB/s between two readings of a KiB counter `seconds` apart; nothing when no time passed or the counter
// went backwards (the driver reloaded).
std::optional<double> counterRateGBps(unsigned long long beforeKiB, unsigned long long afterKiB, double seconds);

// A GPU sample whose SM clock is held well below the GPU's maximum while it is busy, whether or not NVML
// gave a reason: busy is at least kBusyGpuPercent utilisation, well below is under kLowClockFraction of
// the maximum SM clock. Idle GPUs lower their clocks by design; busy ones should not.
constexpr double kBusyGpuPercent = 50, kLowClockFraction = 0.85;
bool lowClockUnderLoad(const nlohmann::json& gpuSample, const nlohmann::json& maxSmClockMhz);

// TRAINSCOPE_TELEMETRY_MS as seconds (default 0.2; 0 = off). UsageError for a value that is not a number >= 0.
double telemetryIntervalFromEnvironment();

class TelemetrySampler {
 public:
  // Takes a first sample now, then one per interval. `runPids`: the run's processes on this host; their
  // CPU time and their children's is the run's own, the rest of the busy time is other processes'.
  TelemetrySampler(double intervalS, std::vector<int> runPids);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;
  // Takes a last sample, stops the thread, and returns {"interval_s", "samples": [...]}; once.
  nlohmann::json stop();

 private:
  void run();
  nlohmann::json sample();
  unsigned long long ownTicksSinceLastSample();
  struct Gpus;
  double intervalS_;
  double startS_;
  std::optional<CpuTimes> lastCpu_;
  std::vector<int> runPids_;
  std::map<int, unsigned long long> lastOwnTicks_;  // per process of the run (and its children), at the last sample
  std::unique_ptr<Gpus> gpus_;
  nlohmann::json samples_ = nlohmann::json::array();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// A telemetry record from a sampler's output: the host, the series, and its summary (min/median/max of
// each series; for each GPU the samples whose clocks throttled, with NVML's reasons, and those whose SM
// clock was low under load; `throttled` when there were any).
nlohmann::json telemetryRecord(const std::string& host, int process, const nlohmann::json& sampled);

}  // namespace ts
