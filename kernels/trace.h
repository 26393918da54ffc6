#pragma once
// Trace spans: what this process did and when, on the steady clock, for `--trace DIR` (Chrome trace JSON
// per rank, merged across ranks by bench/). Off by default: a span then costs one branch. Spans are
// recorded by the training thread only (the loader thread records none), so no locking.
//
// Categories the analysis reads (reports/analyze.py): "step" (one per training step), "phase" (data,
// sync), "compute" (forward and backward of a micro-batch and of each layer, the optimizer update),
// "communication" (a collective or a send/recv from launch to observed completion, on its own track,
// with bytes and group), "wait" (blocked on communication, inside a phase).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts::trace {

enum class Track { kMain = 0, kCommunication = 1 };

struct Event {
  std::string name, category;
  double startUs = 0, durationUs = 0;  // steady clock, microseconds since its epoch
  Track track = Track::kMain;
  nlohmann::json args;
};

bool enabled();
void enable(bool on);
double nowUs();
void record(std::string name, std::string category, double startUs, double endUs, Track track = Track::kMain, nlohmann::json args = nullptr);
// "<name> <index>": the name is only formatted when tracing is on (no cost on the step's path otherwise).
void record(const char* name, int index, const char* category, double startUs, double endUs);
std::vector<Event> take();  // everything recorded so far, in order; clears it

// RAII: a span from construction to destruction. The name is "<name>" or "<name> <index>".
class Span {
 public:
  Span() = default;
  Span(const char* name, const char* category, int index = -1);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  bool on_ = false;
  const char* name_ = nullptr;
  const char* category_ = nullptr;
  int index_ = -1;
  double start_ = 0;
};

}  // namespace ts::trace
