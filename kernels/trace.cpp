#include "kernels/trace.h"

#include <chrono>

namespace ts::trace {
namespace {
bool g_on = false;
std::vector<Event> g_events;
}  // namespace

bool enabled() { return g_on; }
void enable(bool on) { g_on = on; }

double nowUs() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void record(std::string name, std::string category, double startUs, double endUs, Track track, nlohmann::json args) {
  if (!g_on) return;
  g_events.push_back({std::move(name), std::move(category), startUs, endUs - startUs, track, std::move(args)});
}

void record(const char* name, int index, const char* category, double startUs, double endUs) {
  if (g_on) record(index >= 0 ? std::string(name) + " " + std::to_string(index) : std::string(name), category, startUs, endUs);
}

std::vector<Event> take() {
  std::vector<Event> out;
  out.swap(g_events);
  return out;
}

Span::Span(const char* name, const char* category, int index) : on_(g_on), name_(name), category_(category), index_(index) {
  if (on_) start_ = nowUs();
}

Span::~Span() {
  if (on_) record(name_, index_, category_, start_, nowUs());
}

}  // namespace ts::trace
