#include "kernels/trace.h"

#include <chrono>
#include <cstring>

#include "kernels/instrumentation.h"

namespace ts::trace {
namespace {
bool g_on = false;
std::vector<Event> g_events;
}  // namespace

bool enabled() { return g_on; }
void enable(bool on) { g_on = on; }

double nowUs() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void record(std::string name, Role role, double startUs, double endUs, Track track, nlohmann::json args) {
  if (!g_on) return;
  g_events.push_back({std::move(name), role, startUs, endUs - startUs, track, std::move(args)});
}

void record(const char* name, int index, Role role, double startUs, double endUs) {
  if (g_on) record(index >= 0 ? std::string(name) + " " + std::to_string(index) : std::string(name), role, startUs, endUs);
}

std::vector<Event> take() {
  std::vector<Event> out;
  out.swap(g_events);
  return out;
}

namespace {
// The NVTX category of a span: its role's, with the data phase and the optimizer apart.
nvtx::Category nvtxCategory(const char* name, Role role) {
  if (role == Role::kCompute) return std::strcmp(name, "optimizer") == 0 ? nvtx::Category::kOptimizer : nvtx::Category::kCompute;
  if (role == Role::kStep) return nvtx::Category::kStep;
  if (std::strcmp(name, "data") == 0 || std::strcmp(name, "checkpoint") == 0) return nvtx::Category::kData;
  return nvtx::Category::kCommunication;  // communication, a wait, and the sync phase
}
}  // namespace

Span::Span(const char* name, Role role, int index) : name_(name), role_(role), index_(index), start_(nowUs()) {
  nvtx::push(name, nvtxCategory(name, role), index);
}

Span::Span(std::string name, Role role)
    : owned_(std::move(name)), name_(owned_.c_str()), role_(role), index_(-1), start_(nowUs()) {
  nvtx::push(name_, nvtxCategory(name_, role), -1);
}

Span::~Span() {
  if (open_) close();
}

double Span::close() {
  const double end = nowUs();
  if (!open_) return 0;
  open_ = false;
  nvtx::pop();
  if (g_on) {
    record(index_ >= 0 ? std::string(name_) + " " + std::to_string(index_) : std::string(name_), role_, start_, end, Track::kMain,
           std::move(args_));
  }
  return (end - start_) * 1e-6;
}

void Span::annotate(nlohmann::json args) {
  if (g_on) args_ = std::move(args);
}

}  // namespace ts::trace
