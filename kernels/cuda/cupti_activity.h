#pragma once
// Kernel-level device spans for `--trace` on a GPU, from the CUPTI activity API: every kernel (named as
// CUPTI reports it, demangled, so NCCL's kernels read as NCCL names them), memcpy and memset with its
// device, stream and start/end on the device clock, and every CUDA runtime API call with the correlation
// id that ties a launch to what it launched (and the CUDA driver API calls that launched device work
// themselves, as NCCL's cuLaunchKernelEx does). Device timestamps are moved onto the host's steady clock by
// an offset measured when the trace starts (the tightest of several bracketed readings of both clocks;
// `clockOffsetUs` and `clockUncertaintyUs` say what it was and how good).
//
// Only compiled with CUDA and CUPTI (TRAINSCOPE_HAVE_CUPTI); one ActivityTrace per process at a time.
#include <cstdint>
#include <string>
#include <vector>

namespace ts::cuda {

struct DeviceSpan {
  enum class Kind { kKernel, kMemcpy, kMemset, kRuntimeApi, kDriverApi };
  Kind kind = Kind::kKernel;
  std::string name;    // demangled kernel name, "Memcpy HtoD", "Memset" (Kineto's names), or the runtime/driver API call
  std::string launch;  // device work: the API call that launched it (same correlation id); "" when none was recorded
  double startUs = 0, endUs = 0;  // host steady clock, microseconds since its epoch
  std::uint32_t device = 0, stream = 0, correlation = 0;
  std::uint32_t thread = 0;  // API calls: the calling thread's id
  std::uint64_t bytes = 0;   // memcpy / memset
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
};

class ActivityTrace {
 public:
  ActivityTrace();  // enables the activity kinds; Error naming the CUPTI call on failure
  ~ActivityTrace();
  ActivityTrace(const ActivityTrace&) = delete;
  ActivityTrace& operator=(const ActivityTrace&) = delete;
  // Waits for the current device, flushes CUPTI's buffers, stops recording and returns every span in start
  // order: all device work and runtime calls; driver calls only where they launched device work that no
  // runtime call did (the runtime's own driver calls would double every launch).
  std::vector<DeviceSpan> finish();
  double clockOffsetUs() const { return offsetUs_; }
  double clockUncertaintyUs() const { return uncertaintyUs_; }
  // How far a span's time, converted to the host clock, may be from the host clock's own reading of the same
  // instant at host time atUs: the offset's uncertainty, the two clocks' drift since the offset was measured
  // (CUPTI's clock need not be steady_clock's, which NTP may slew by up to kMaxDriftPpm), and the
  // timestamps' nanosecond tick.
  double clockErrorUs(double atUs) const;
  static constexpr double kMaxDriftPpm = 500;       // Linux's limit on NTP's frequency correction (adjtimex)
  static constexpr double kTimestampTickUs = 1e-3;  // CUPTI's timestamps are nanoseconds
  std::uint64_t droppedRecords() const;
  std::uint64_t incompleteRecords() const { return incomplete_; }  // device records without an end (left out)

 private:
  bool running_ = false;
  double offsetUs_ = 0, uncertaintyUs_ = 0;
  double offsetMeasuredAtUs_ = 0;  // host steady clock
  std::uint64_t incomplete_ = 0;
};

}  // namespace ts::cuda
