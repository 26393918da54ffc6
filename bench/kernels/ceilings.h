#pragma once
// The roofline's measured ceilings, for `kernels` (compute and memory) and `train` (compute, for MFU).
// Compute is the best GEMM over large squares; memory a copy per level of the memory hierarchy, its
// working set sized to fit that level (bench/kernels/roofline.h picks the level a kernel's bytes stream at).
// Each is measured with the care a kernel gets — warm-up runs, then trials, best of the trials — and the
// trials of all the ceilings interleave in rounds, so that a busy spell of the host lowers one trial of
// each rather than every trial of one. A kernel (or an MFU) landing above its ceiling, impossible by
// definition, has that ceiling re-measured once; the ceiling is then the best of both measurements, and
// what still lands above it is marked ceiling_suspect by the caller.
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "bench/kernels/ceiling_record.h"
#include "bench/kernels/host_caches.h"
#include "bench/kernels/roofline.h"

namespace ts {

class ResultWriter;

// Warm-up rounds, then timed rounds, of every ceiling measured together.
struct CeilingProtocol {
  int warmup = 2;
  int trials = 5;
};
inline constexpr CeilingProtocol kCeilingProtocol{};

// One ceiling's buffers, ready: timeUs() times one run; work is its FLOPs (compute) or the bytes it
// moves (memory).
struct CeilingRunner {
  std::function<double()> timeUs;
  double work = 0;
};

struct CeilingSpec {
  CeilingKind kind = CeilingKind::kCompute;
  MemoryLevel level = MemoryLevel::kDram;                          // memory
  double workingSetBytes = 0;                                      // memory: what the copy touches
  double capacityBytes = std::numeric_limits<double>::infinity();  // memory: the most a kernel may touch to be held to it
  std::string source;                                              // how it is measured (record and console)
  int cudaDevice = -1;                                             // whose clock the record states (-1: the CPU's)
  std::function<CeilingRunner()> make;                             // allocates and fills the buffers (again for a re-check)
};

// A memory ceiling's spec with its level, working set and capacity filled in; the caller adds how it runs.
CeilingSpec memoryCeilingSpec(MemoryLevel level, double workingSet, double capacity, std::string source);

// The float32 OpenBLAS GEMM at squares of 512, 1024 and 2048.
std::vector<CeilingSpec> cpuGemmCeilingSpecs();
// A copy on `threads` threads per cache level (from hostDataCaches) and one well past the largest.
std::vector<CeilingSpec> cpuMemoryCeilingSpecs(int threads, const std::vector<CacheLevelSize>& caches);
// cuBLASLt GEMM in `p` at 4096² and 8192² on `device`; none in a build without CUDA.
std::vector<CeilingSpec> cudaGemmCeilingSpecs(Precision p, int device);
// Device copies on `device`: one that the L2 holds, timed as graph replays as short kernels are (so the
// data stays in L2), and 1 GiB (device memory); none in a build without CUDA.
std::vector<CeilingSpec> cudaMemoryCeilingSpecs(int device);

// Where a kernel_ceiling record goes, one per spec at each measurement: process 0's writer, or (another
// host's measuring process) a list that travels to process 0.
using CeilingSink = std::function<void(const nlohmann::json&)>;

// The sink into `writer` (none when null: a process that writes nothing).
CeilingSink writerSink(ResultWriter* writer);

struct CeilingOptions {
  CeilingSink emit;            // a kernel_ceiling record per spec, at each measurement (none: not recorded)
  std::string step;            // the suite step, for the records
  double plantedScale = 1;     // a planted TRAINSCOPE_FAULT=ceiling (tests): every value x this
  bool hostContention = true;  // state other processes' share of the CPUs (the CPU's ceilings)
};

class CeilingSet {
 public:
  CeilingSet(std::vector<CeilingSpec> specs, CeilingOptions o);  // measures every spec
  double computeTflops() const;                                  // 0 without compute specs
  std::vector<MemoryCeiling> memoryLevels() const;               // nearest first, DRAM last; empty without memory specs
  // Measures that ceiling again (memory: that level's), because `trigger` landed above it; afterwards its
  // value is the best of both measurements. Once per ceiling and run: false, measuring nothing, after that.
  bool recheck(CeilingKind kind, MemoryLevel level, const std::string& trigger);
  SuspectCause likelyCause(CeilingKind kind, MemoryLevel level) const;
  bool planted() const { return o_.plantedScale != 1; }
  // The best compute measurement: where it came from and the clock it ran at (MFU states both).
  std::string computeSource() const;
  nlohmann::json computeClockMhz() const;
  bool computeRechecked() const;
  std::string consoleLine() const;  // "# ceilings ..."

 private:
  struct Entry {
    CeilingSpec spec;
    double value = 0;              // best over its measurements
    std::optional<double> clock;   // of the measurement that gave value
    std::optional<double> others;  // other processes' CPU share during the measurement that gave value
    bool rechecked = false;
  };
  // Returns the best value this measurement gave.
  double measure(const std::vector<std::size_t>& which, const std::string& trigger);
  // One spec's measurement as its record: `work` over the best trial's time.
  KernelCeilingRecord recordOf(const CeilingSpec& spec, const Stats& s, double work, std::optional<double> others,
                               const std::string& trigger) const;
  bool matches(const Entry& e, CeilingKind kind, MemoryLevel level) const;
  const Entry* bestOf(CeilingKind kind, MemoryLevel level) const;
  std::vector<Entry> entries_;
  CeilingOptions o_;
};

}  // namespace ts
