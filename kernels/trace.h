#pragma once
// Trace spans: what this process did and when, on the steady clock, for `--trace DIR` (Chrome trace JSON
// per rank, merged across ranks by bench/). Off by default: a span then costs one branch. Spans are
// recorded by the training thread only (the loader thread records none), so no locking.
//
// Each span has a role, which the analysis reads (reports/traces/analyze.py): a step (one per training step), a
// phase (data, sync), compute (forward and backward of a micro-batch and of each layer, the optimizer update),
// communication (a collective or a send/recv from launch to observed completion, on its own track, with bytes
// and group), a wait (blocked on communication, inside a phase), and the device's work and CUDA calls (CUPTI's,
// bench/run/trace_files.h). The files carry it as the span's args.role, beside Kineto's category; the
// trace schema's enum of args.role is these names (a unit test holds the two together).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"

namespace ts::trace {

enum class Role { kStep, kPhase, kCompute, kCommunication, kWait, kKernel, kMemcpy, kMemset, kCudaRuntime, kCudaDriver };

}  // namespace ts::trace

namespace ts {
template <>
struct EnumNames<trace::Role> {
  static constexpr std::pair<std::string_view, trace::Role> kNames[] = {{"step", trace::Role::kStep},
                                                                        {"phase", trace::Role::kPhase},
                                                                        {"compute", trace::Role::kCompute},
                                                                        {"communication", trace::Role::kCommunication},
                                                                        {"wait", trace::Role::kWait},
                                                                        {"kernel", trace::Role::kKernel},
                                                                        {"memcpy", trace::Role::kMemcpy},
                                                                        {"memset", trace::Role::kMemset},
                                                                        {"cuda_runtime", trace::Role::kCudaRuntime},
                                                                        {"cuda_driver", trace::Role::kCudaDriver}};
};
}  // namespace ts

namespace ts::trace {

enum class Track { kMain = 0, kCommunication = 1 };

struct Event {
  std::string name;
  Role role = Role::kCompute;
  double startUs = 0, durationUs = 0;  // steady clock, microseconds since its epoch
  Track track = Track::kMain;
  nlohmann::json args;
};

bool enabled();
void enable(bool on);
double nowUs();
void record(std::string name, Role role, double startUs, double endUs, Track track = Track::kMain, nlohmann::json args = nullptr);
// "<name> <index>": the name is only formatted when tracing is on (no cost on the step's path otherwise).
void record(const char* name, int index, Role role, double startUs, double endUs);
std::vector<Event> take();  // everything recorded so far, in order; clears it

// RAII: a span from construction to close() (or destruction), and the NVTX range of the same name and
// role's category around it (kernels/instrumentation.h), so `nsys profile` shows what the trace shows. The name is
// "<name>" or "<name> <index>" (NVTX: the index is the payload). Spans on one thread nest (LIFO).
class Span {
 public:
  Span(const char* name, Role role, int index = -1);
  // A name built at run time ("all_reduce 4 MiB out-of-place"): kept by the span.
  Span(std::string name, Role role);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  // Ends the span now; returns its length in seconds (measured whether tracing is on or not, so the
  // caller's phase timing and the trace are one clock reading).
  double close();
  // Arguments kept with the span in the trace (ignored when tracing is off).
  void annotate(nlohmann::json args);

 private:
  bool open_ = true;
  std::string owned_;
  const char* name_;
  Role role_;
  int index_;
  double start_;
  nlohmann::json args_;
};

}  // namespace ts::trace
